// Builds the `agentctl/adk` package export: dist/adk/index.js (ESM bundle of src/adk with the client
// and contract it uses; zod and undici stay dependencies) and, with declarations, typed .d.ts files
// under dist/adk/types/ from tsconfig.adk.json. Used by scripts/build.mjs and by the ADK's tests.
import { build } from 'esbuild';
import { execFileSync } from 'node:child_process';
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));

export async function buildAdk({ declarations = true } = {}) {
  const outdir = path.join(root, 'dist', 'adk');
  const result = await build({
    absWorkingDir: root,
    entryPoints: { index: 'src/adk/index.ts' },
    outdir,
    bundle: true,
    format: 'esm',
    platform: 'node',
    target: 'node22',
    // Chunks for what loads on first use (the contract's schemas, the sync library), so importing
    // the ADK costs only what an agent needs to start.
    splitting: true,
    chunkNames: 'chunks/[name]-[hash]',
    packages: 'external',
    write: false,
    metafile: true,
    legalComments: 'none',
    logLevel: 'warning',
  });
  mkdirSync(path.join(outdir, 'chunks'), { recursive: true });
  // Written beside and renamed: two test files building at once never see half a file (chunk names
  // carry a content hash, so an older chunk left behind is never loaded by a newer entry).
  for (const file of result.outputFiles) {
    const tmp = `${file.path}.${process.pid}.tmp`;
    writeFileSync(tmp, file.contents);
    renameSync(tmp, file.path);
  }
  writeFileSync(path.join(outdir, 'meta.json'), JSON.stringify(result.metafile));
  if (declarations) {
    const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
    execFileSync(process.execPath, [tsc, '-p', path.join(root, 'tsconfig.adk.json')], { cwd: root, stdio: 'inherit' });
  }
  return Object.keys(result.metafile.inputs);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  // --no-declarations: the bundle only (what a test running an agent needs), without the slow tsc pass.
  await buildAdk({ declarations: !process.argv.includes('--no-declarations') });
  console.log('built dist/adk/');
}
