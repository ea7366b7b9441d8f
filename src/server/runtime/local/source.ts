import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, lstatSync, mkdirSync, readFileSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { AGENT_PROJECT_FILE } from '../../../contract/agent-project.js';
import type { FailureDiagnostics, RuntimeHappening, VersionSpec } from '../driver.js';
import { DIAGNOSTIC_LINES, inheritedEnv, pipeLines, signalGroup } from './child-processes.js';

export interface SourceOptions {
  /** `<dataDir>/runtime/versions`: one prepared source tree per version. */
  versionsDir: string;
  /** Fills `dir` (which exists and is empty) with the version's source tree. */
  prepareSource(spec: VersionSpec, dir: string): Promise<void>;
  /** Time allowed for `npm install` and for the build command. */
  buildTimeoutMs: number;
  /** The agentctl package that `node_modules/agentctl` links to. */
  agentctlRoot: string;
}

/** A version's source, ready to run: where, which file, and the environment of agentctl.json. */
export interface PreparedSource {
  dir: string;
  entry: string;
  env: Record<string, string>;
}

/** Why a version's source could not be prepared: the `failed` happening the driver reports. */
export class PrepareFailure extends Error {
  constructor(
    readonly reason: Extract<RuntimeHappening, { kind: 'failed' }>['reason'],
    readonly diagnostics: FailureDiagnostics,
  ) {
    super(diagnostics.title);
  }
}

/** Any error of prepareVersionSource() as a PrepareFailure (an unexpected one becomes `source_unavailable`). */
export function asPrepareFailure(error: unknown): PrepareFailure {
  return error instanceof PrepareFailure
    ? error
    : new PrepareFailure('source_unavailable', {
        title: 'The version could not be prepared',
        description: (error as Error).message,
        action: 'Deploy again; if it persists, check the server’s data directory.',
      });
}

/**
 * The version's source checked out, its dependencies installed (agentctl linked, never installed)
 * and its build command run, once per version: a server restart reuses it. Throws PrepareFailure.
 */
export async function prepareVersionSource(spec: VersionSpec, options: SourceOptions): Promise<PreparedSource> {
  const versionDir = join(options.versionsDir, spec.versionId);
  const dir = join(versionDir, 'source');
  // Prepared into a staging directory, renamed when complete.
  if (!existsSync(join(versionDir, '.prepared'))) {
    rmSync(versionDir, { recursive: true, force: true });
    const staging = join(options.versionsDir, `.${spec.versionId}.${process.pid}.${Date.now()}`);
    mkdirSync(staging, { recursive: true });
    try {
      try {
        await options.prepareSource(spec, staging);
      } catch (error) {
        throw new PrepareFailure('source_unavailable', {
          title: 'The source of the version could not be prepared',
          description: `${spec.imageUrl}: ${(error as Error).message}`,
          action: 'Deploy again from the agent’s repository (`agentctl deploy`).',
        });
      }
      await installDependencies(staging, spec, options);
      const build = spec.build ?? readProjectFile(staging).build;
      if (build) await runCommand('sh', ['-c', build], staging, spec, `the build command (${build})`, options.buildTimeoutMs);
      mkdirSync(versionDir, { recursive: true });
      renameSync(staging, dir);
      writeFileSync(join(versionDir, '.prepared'), new Date().toISOString());
    } finally {
      rmSync(staging, { recursive: true, force: true });
    }
  }
  const project = readProjectFile(dir);
  const entry = spec.entry ?? project.entry ?? 'src/index.ts';
  if (!existsSync(join(dir, entry))) {
    throw new PrepareFailure('source_unavailable', {
      title: 'The entry file is missing',
      description: `${entry} is not in the source of version ${spec.versionId}.`,
      action: `Set "entry" in ${AGENT_PROJECT_FILE} to the file Node should run, commit and deploy again.`,
    });
  }
  return { dir, entry, env: { ...project.env, ...spec.env } };
}

async function installDependencies(dir: string, spec: VersionSpec, options: SourceOptions) {
  const manifestPath = join(dir, 'package.json');
  let manifest: Record<string, unknown> | undefined;
  if (existsSync(manifestPath)) {
    try {
      manifest = JSON.parse(readFileSync(manifestPath, 'utf8')) as Record<string, unknown>;
    } catch (error) {
      throw new PrepareFailure('build_failed', {
        title: 'package.json is not valid JSON',
        description: (error as Error).message,
        action: 'Fix package.json, commit and deploy again.',
      });
    }
  }
  const dependencies = { ...(manifest?.dependencies as Record<string, string> | undefined) };
  delete dependencies.agentctl;
  if (manifest && Object.keys(dependencies).length > 0) {
    // agentctl itself is never installed (it is the running package, linked below): npm sees a
    // manifest without it, and the real one is put back afterwards.
    const original = readFileSync(manifestPath);
    writeFileSync(manifestPath, JSON.stringify({ ...manifest, dependencies, devDependencies: {} }));
    try {
      await runCommand(
        'npm',
        ['install', '--omit=dev', '--no-audit', '--no-fund', '--prefer-offline', '--no-package-lock'],
        dir,
        spec,
        'npm install',
        options.buildTimeoutMs,
      );
    } finally {
      writeFileSync(manifestPath, original);
    }
  }
  const link = join(dir, 'node_modules', 'agentctl');
  mkdirSync(dirname(link), { recursive: true });
  if (!isLink(link)) {
    rmSync(link, { recursive: true, force: true });
    symlinkSync(options.agentctlRoot, link, 'dir');
  }
}

async function runCommand(command: string, args: string[], dir: string, spec: VersionSpec, what: string, timeoutMs: number) {
  const output: string[] = [];
  const child = spawn(command, args, { cwd: dir, env: { ...inheritedEnv(), ...spec.env }, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  pipeLines(child.stdout!, (line) => output.push(line));
  pipeLines(child.stderr!, (line) => output.push(line));
  const timer = setTimeout(() => child.pid && signalGroup(child.pid, 'SIGKILL'), timeoutMs);
  const [code] = (await once(child, 'close').catch(() => [null])) as [number | null];
  clearTimeout(timer);
  if (code !== 0) {
    throw new PrepareFailure('build_failed', {
      title: `${what} failed`,
      description: `${what} exited with ${code === null ? 'a signal or a timeout' : `code ${code}`}. Last lines:\n${output.slice(-DIAGNOSTIC_LINES).join('\n')}`,
      action: `Run ${what} in the agent’s repository, fix what fails, commit and deploy again.`,
    });
  }
}

function readProjectFile(dir: string): { entry?: string; build?: string; env: Record<string, string> } {
  const path = join(dir, AGENT_PROJECT_FILE);
  if (!existsSync(path)) return { env: {} };
  try {
    const raw = JSON.parse(readFileSync(path, 'utf8')) as { entry?: unknown; build?: unknown; env?: unknown };
    const env: Record<string, string> = {};
    if (raw.env && typeof raw.env === 'object') {
      for (const [name, value] of Object.entries(raw.env)) if (typeof value === 'string') env[name] = value;
    }
    return {
      entry: typeof raw.entry === 'string' && raw.entry ? raw.entry : undefined,
      build: typeof raw.build === 'string' && raw.build ? raw.build : undefined,
      env,
    };
  } catch (error) {
    throw new PrepareFailure('build_failed', {
      title: `${AGENT_PROJECT_FILE} is not valid JSON`,
      description: (error as Error).message,
      action: `Fix ${AGENT_PROJECT_FILE}, commit and deploy again.`,
    });
  }
}

function isLink(path: string): boolean {
  try {
    return lstatSync(path).isSymbolicLink();
  } catch {
    return false;
  }
}

/** The directory of the running agentctl package: the nearest package.json named agentctl above this file. */
export function findPackageRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const manifest = join(dir, 'package.json');
    if (existsSync(manifest)) {
      try {
        if ((JSON.parse(readFileSync(manifest, 'utf8')) as { name?: string }).name === 'agentctl') return dir;
      } catch {
        // keep looking
      }
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error('The agentctl package root was not found above the running code');
    dir = parent;
  }
}
