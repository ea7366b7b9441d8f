#!/usr/bin/env node
// npm run build: bundles the CLI into dist/ (ESM, one lazily loaded chunk per command), writes
// openapi.json from the contract, and regenerates completions/ from the bundled CLI's registry.
import { build } from 'esbuild';
import { execFileSync } from 'node:child_process';
import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { buildAdk } from './build-adk.mjs';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const dist = path.join(root, 'dist');
const pkg = JSON.parse((await import('node:fs')).readFileSync(path.join(root, 'package.json'), 'utf8'));

// The server's own dependencies load files next to their modules (PGlite's wasm) or are large and
// only needed by `agentctl server start`: they stay in node_modules. Everything the CLI needs on
// every start is bundled, which is what keeps start-up near a bare `node -e 0`.
const serverOnly = ['@electric-sql/pglite', 'kysely-pglite-dialect', 'kysely', 'pg', 'fastify', 'ulid', 'undici', '@kubernetes/client-node'];
// undici (the dispatcher, sync and stream transports) stays in node_modules too: bundled, its module
// evaluation fails (lib/interceptor/decompress.js), and only long-lived paths load it.

// zod re-exports all of its ~50 message locales as `z.locales`; the CLI only ever speaks English.
// Swapping the locale index for one that exports `en` drops ~400 KB that every command would parse.
const englishOnlyZod = {
  name: 'zod-english-only',
  setup(b) {
    b.onResolve({ filter: /\/locales\/index\.js$/ }, (args) =>
      args.importer.includes(`${path.sep}node_modules${path.sep}zod${path.sep}`) ? { path: path.join(path.dirname(args.importer), '..', 'locales', 'index.js'), namespace: 'zod-locales' } : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'zod-locales' }, (args) => ({ contents: "export { default as en } from './en.js';", resolveDir: path.dirname(args.path), loader: 'js' }));
  },
};

rmSync(dist, { recursive: true, force: true });
await build({
  absWorkingDir: root,
  entryPoints: { agentctl: 'src/cli/main.ts' },
  outdir: dist,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node22',
  chunkNames: 'chunks/[name]-[hash]',
  external: serverOnly,
  plugins: [englishOnlyZod],
  minifyWhitespace: true,
  minifySyntax: true,
  legalComments: 'none',
  // Bundled CommonJS packages (cli-table3, ...) call require(); ESM output has none of its own.
  banner: { js: "import { createRequire as __agentctlRequire } from 'node:module'; const require = __agentctlRequire(import.meta.url);" },
  logLevel: 'warning',
});

// The `agentctl/adk` package export: its own bundle and typed declarations.
await buildAdk();

// openapi.json from the endpoint table, exactly what GET /openapi.json serves.
const tmp = path.join(dist, '.openapi-build.mjs');
await build({ absWorkingDir: root, entryPoints: ['src/contract/openapi.ts'], outfile: tmp, bundle: true, format: 'esm', platform: 'node', target: 'node22', logLevel: 'warning' });
const { buildOpenApiDocument } = await import(pathToFileURL(tmp).href);
rmSync(tmp);
writeFileSync(path.join(root, 'openapi.json'), JSON.stringify(buildOpenApiDocument(pkg.version), null, 2) + '\n');

// Completion scripts, from the registry of the CLI just built.
mkdirSync(path.join(root, 'completions'), { recursive: true });
for (const [shell, file] of [['bash', 'agentctl.bash'], ['zsh', '_agentctl'], ['fish', 'agentctl.fish']]) {
  const script = execFileSync(process.execPath, [path.join(dist, 'agentctl.js'), 'completion', shell], { encoding: 'utf8' });
  writeFileSync(path.join(root, 'completions', file), script);
}
console.log('built dist/agentctl.js, dist/adk/, openapi.json and completions/');
