import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import envPaths from 'env-paths';

/**
 * A new PGlite database (initdb, then every schema change) takes seconds of CPU; a copy of one
 * (PGlite's dumpDataDir, loaded with its loadDataDir option, the way PGlite itself installs what
 * initdb made) takes a fraction of that. The first database created on a machine is saved as a
 * template in the user's cache directory, named by everything its content depends on (the PGlite
 * build, the record table and each schema change's name and script), so a changed schema or a
 * PGlite upgrade makes a new one and never loads a stale one.
 */

/** Where templates are kept: AGENTCTL_CACHE_DIR, else the XDG cache directory (`~/.cache/agentctl`). */
export function cacheDir(env: NodeJS.ProcessEnv = process.env): string {
  if (env.AGENTCTL_CACHE_DIR) return path.resolve(env.AGENTCTL_CACHE_DIR);
  if (env.XDG_CACHE_HOME) return path.join(env.XDG_CACHE_HOME, 'agentctl');
  return envPaths('agentctl', { suffix: '' }).cache;
}

/** The file of the template for this content: `<cache>/pglite/<hash>.tar.gz`. */
export function templateFile(content: { recordDdl: string; changes: Array<{ name: string; script: string }> }, env: NodeJS.ProcessEnv = process.env): string {
  const hash = createHash('sha256')
    .update(JSON.stringify({ pglite: pgliteVersion(), ...content }))
    .digest('hex')
    .slice(0, 32);
  return path.join(cacheDir(env), 'pglite', `${hash}.tar.gz`);
}

/** The template's bytes, or undefined when there is none (or it cannot be read: the database is then made from scratch). */
export function readTemplate(file: string): Blob | undefined {
  try {
    return new Blob([readFileSync(file)]);
  } catch {
    return undefined;
  }
}

/**
 * Saves a dump as the template, whole or not at all (written beside it, then renamed), so a process
 * reading it meanwhile never sees part of one. A cache that cannot be written costs only speed.
 */
export function saveTemplate(file: string, dump: Uint8Array): void {
  const partial = `${file}.${process.pid}.partial`;
  try {
    mkdirSync(path.dirname(file), { recursive: true });
    writeFileSync(partial, dump);
    renameSync(partial, file);
  } catch {
    try {
      rmSync(partial, { force: true });
    } catch {
      /* nothing was written */
    }
  }
}

/** Removes a template that could not be loaded. */
export function discardTemplate(file: string): void {
  rmSync(file, { force: true });
}

let version: string | undefined;
function pgliteVersion(): string {
  if (version === undefined) {
    // The package's main file is dist/index.js; its package.json (not exported) is one level up.
    // node:module through getBuiltinModule, as in db.ts: the build's bundle imports it itself (scripts/build.mjs).
    const { createRequire } = process.getBuiltinModule('node:module') as typeof import('node:module');
    const main = createRequire(import.meta.url).resolve('@electric-sql/pglite');
    version = (JSON.parse(readFileSync(path.join(path.dirname(main), '..', 'package.json'), 'utf8')) as { version: string }).version;
  }
  return version;
}
