#!/usr/bin/env node
// npm run build: writes src/contract/routes.ts, src/contract/response-shapes.ts and README.md's endpoint
// table from the contract's endpoint table, and src/cli/manifest.ts from
// the commands' declarations, bundles the CLI into dist/
// (ESM, one lazily loaded chunk per command), the web console into dist/console/, writes openapi.json from the contract, and regenerates
// completions/ from the bundled CLI's registry.
import { build } from 'esbuild';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { isBuiltin } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { buildAdk } from './build-adk.mjs';
import { buildConsole } from './build-console.mjs';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const dist = path.join(root, 'dist');
const pkg = JSON.parse((await import('node:fs')).readFileSync(path.join(root, 'package.json'), 'utf8'));

// The server's own dependencies load files next to their modules (PGlite's wasm) or are large and
// only needed by `agentctl server start`: they stay in node_modules. Everything the CLI needs on
// every start is bundled, which is what keeps start-up near a bare `node -e 0`.
const serverOnly = [
  '@electric-sql/pglite',
  'kysely-pglite-dialect',
  'kysely',
  'pg',
  'fastify',
  'fastify-plugin',
  'ulid',
  'undici',
  '@kubernetes/client-node',
  '@opentelemetry/*',
];
// jq (a WebAssembly build with its module inlined, 1.4 MB) loads from node_modules only when --jq is given.
const onDemand = ['jq-wasm'];
// undici (the dispatcher, sync and stream transports) stays in node_modules too: bundled, its module
// evaluation fails (lib/interceptor/decompress.js), and only long-lived paths load it.

// zod re-exports all of its ~50 message locales as `z.locales`; the CLI only ever speaks English.
// Swapping the locale index for one that exports `en` drops ~400 KB that every command would parse.
const englishOnlyZod = {
  name: 'zod-english-only',
  setup(b) {
    b.onResolve({ filter: /\/locales\/index\.js$/ }, (args) =>
      args.importer.includes(`${path.sep}node_modules${path.sep}zod${path.sep}`)
        ? { path: path.join(path.dirname(args.importer), '..', 'locales', 'index.js'), namespace: 'zod-locales' }
        : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'zod-locales' }, (args) => ({
      contents: "export { default as en } from './en.js';",
      resolveDir: path.dirname(args.path),
      loader: 'js',
    }));
  },
};

// chalk works out a default colour level at import, through node:tty (about half a bare `node -e 0`
// to load). The CLI never uses that default: every instance is `new Chalk({ level })` with the level
// CommandContext decides. (ora brings its own chalk, untouched.)
const chalkWithoutDetection = {
  name: 'chalk-without-detection',
  setup(b) {
    b.onResolve({ filter: /^#supports-color$/ }, (args) =>
      args.importer.startsWith(path.join(root, 'node_modules', 'chalk') + path.sep) ? { path: 'supports-color', namespace: 'chalk-no-detection' } : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'chalk-no-detection' }, () => ({
      contents: 'export function createSupportsColor() { return false; }\nexport default { stdout: false, stderr: false };',
      loader: 'js',
    }));
  },
};

// commander imports node:child_process at load (with dgram and net's socket list: about a tenth of
// a bare `node -e 0`) for executable subcommands, which agentctl does not have: load it on use.
const commanderWithoutEagerChildProcess = {
  name: 'commander-lazy-child-process',
  setup(b) {
    b.onResolve({ filter: /^node:child_process$/ }, (args) =>
      args.importer.startsWith(path.join(root, 'node_modules', 'commander') + path.sep)
        ? { path: 'child_process', namespace: 'commander-lazy-child-process' }
        : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'commander-lazy-child-process' }, () => ({
      contents: "export default { spawn: (...args) => process.getBuiltinModule('node:child_process').spawn(...args) };",
      loader: 'js',
    }));
  },
};

rmSync(dist, { recursive: true, force: true });
mkdirSync(dist, { recursive: true });

// From the endpoint table (src/contract/endpoints.ts), before the CLI bundle that reads them:
// src/contract/routes.ts, every endpoint's route as plain data; src/contract/response-shapes.ts, the
// zod response schemas as shapes (src/contract/shape.ts says why); and the README's endpoint table.
const contractTmp = path.join(dist, '.contract-build.mjs');
await build({
  absWorkingDir: root,
  stdin: { contents: "export * from './shape-describe.ts'; export * from './endpoint-docs.ts';", resolveDir: path.join(root, 'src', 'contract'), loader: 'ts' },
  outfile: contractTmp,
  bundle: true,
  format: 'esm',
  platform: 'node',
  target: 'node22',
  logLevel: 'warning',
});
const { describeResponses, responseShapesSource, routesSource, withEndpointTable } = await import(pathToFileURL(contractTmp).href);
rmSync(contractTmp);
writeFileSync(path.join(root, 'src', 'contract', 'routes.ts'), routesSource());
writeFileSync(path.join(root, 'src', 'contract', 'response-shapes.ts'), responseShapesSource(describeResponses()));
writeFileSync(path.join(root, 'README.md'), withEndpointTable(readFileSync(path.join(root, 'README.md'), 'utf8')));

// src/cli/manifest.ts from the commands' own declarations (src/cli/manifest-describe.ts), before the
// CLI bundle that reads it at start-up.
const describeTmp = path.join(dist, '.manifest-describe.mjs');
await build({
  absWorkingDir: root,
  entryPoints: ['src/cli/manifest-describe.ts'],
  outfile: describeTmp,
  bundle: true,
  format: 'esm',
  platform: 'node',
  target: 'node22',
  logLevel: 'warning',
});
const { commandModules, isCommand, manifestSource } = await import(pathToFileURL(describeTmp).href);
const modules = commandModules(path.join(root, 'src', 'cli'));
const commandsTmp = path.join(dist, '.manifest-commands.mjs');
await build({
  absWorkingDir: root,
  stdin: { contents: modules.map((m, i) => `export * as m${i} from './${m}.ts';`).join('\n'), resolveDir: path.join(root, 'src', 'cli'), loader: 'ts' },
  outfile: commandsTmp,
  bundle: true,
  format: 'esm',
  platform: 'node',
  target: 'node22',
  external: [...serverOnly, ...onDemand],
  banner: { js: "import { createRequire as __agentctlRequire } from 'node:module'; const require = __agentctlRequire(import.meta.url);" },
  logLevel: 'warning',
});
const loaded = await import(pathToFileURL(commandsTmp).href);
rmSync(describeTmp);
rmSync(commandsTmp);
const found = modules.map((module, i) => ({ module, command: loaded[`m${i}`].default })).filter(({ command }) => isCommand(command));
writeFileSync(path.join(root, 'src', 'cli', 'manifest.ts'), manifestSource(found));

const cli = await build({
  absWorkingDir: root,
  // The archive validator's worker thread: src/sync/validate.ts starts ./validate-worker.js next to
  // its own chunk (dist/chunks/), so it is built there under that name.
  entryPoints: { agentctl: 'src/cli/main.ts', 'chunks/validate-worker': 'src/sync/validate-worker.ts' },
  outdir: dist,
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node22',
  chunkNames: 'chunks/[name]-[hash]',
  external: [...serverOnly, ...onDemand],
  plugins: [englishOnlyZod, chalkWithoutDetection, commanderWithoutEagerChildProcess],
  metafile: true,
  minifyWhitespace: true,
  minifySyntax: true,
  legalComments: 'none',
  // Bundled CommonJS packages (cli-table3, ...) call require(); ESM output has none of its own.
  banner: { js: "import { createRequire as __agentctlRequire } from 'node:module'; const require = __agentctlRequire(import.meta.url);" },
  logLevel: 'warning',
});
// No command's start-up path may load zod (about a third of a short command's run): what a command
// imports statically, from the entry to its own module, must not reach it. zod loads on demand only
// (a long-lived client's response schemas).
{
  const outputs = cli.metafile.outputs;
  const staticClosure = (file, seen = new Set()) => {
    if (seen.has(file)) return seen;
    seen.add(file);
    for (const i of outputs[file]?.imports ?? []) if (i.kind === 'import-statement' && !i.external) staticClosure(i.path, seen);
    return seen;
  };
  const reachesZod = (file) => [...staticClosure(file)].some((f) => Object.keys(outputs[f]?.inputs ?? {}).some((input) => input.includes('node_modules/zod/')));
  const entry = Object.keys(outputs).find((f) => outputs[f].entryPoint === 'src/cli/main.ts');
  const commandChunks = Object.keys(outputs).filter((f) => outputs[f].entryPoint?.startsWith('src/cli/commands/'));
  // deploy and init check agentctl.json against its one schema (src/contract/agent-project.ts); both
  // run git and write or upload files, so the schema is a small part of their run. dev runs until
  // Ctrl-C (and reads .agentctlignore with src/sync): its start-up is not a short command's.
  const allowed = new Set(['src/cli/commands/deploy.ts', 'src/cli/commands/init.ts', 'src/cli/commands/dev.ts']);
  const offenders = [entry, ...commandChunks].filter((f) => !allowed.has(outputs[f].entryPoint) && reachesZod(f)).map((f) => outputs[f].entryPoint);
  if (!commandChunks.length) throw new Error('found no command chunks in the metafile');
  if (offenders.length)
    throw new Error(`these load zod at start-up; import zod-free contract modules instead (src/contract/enums.ts, lifecycle.ts): ${offenders.join(', ')}`);
}
for (const [file, output] of Object.entries(cli.metafile.outputs)) {
  if (!file.endsWith('.js')) continue;
  const builtins = output.imports.filter((i) => i.external && i.kind === 'import-statement' && isBuiltin(i.path) && i.path !== 'node:module').length;
  writeFileSync(path.join(root, file), withoutBuiltinFacades(readFileSync(path.join(root, file), 'utf8'), builtins, file));
}

/**
 * `import { readFileSync } from 'node:fs'` costs more than it looks: Node's ESM facade of a built-in
 * module reads every export once, and some are getters that load more (fs.promises, util's lazy
 * parts, the process.stdin/stdout/stderr streams). Measured with callgrind, node:fs, node:process and
 * node:util each cost about a fifth of a bare `node -e 0`. So the bundle's imports of built-ins
 * become `const { readFileSync } = process.getBuiltinModule('node:fs')` at the top of the chunk,
 * which reads only the names it binds. esbuild prints such imports exactly as matched here; the
 * count is checked against the metafile, so a miss fails the build instead of costing time.
 */
function withoutBuiltinFacades(code, expected, file) {
  const consts = [];
  const statement = /(?<=^|[;}\n])import(\*as [\w$]+| ?[\w$]+,\{[^}]*\}| ?[\w$]+|\{[^}]*\}) ?from"([^"]+)";/g;
  const rewritten = code.replace(statement, (whole, clause, from) => {
    if (!isBuiltin(from)) return whole;
    const module = `globalThis.process.getBuiltinModule(${JSON.stringify(from.startsWith('node:') ? from : `node:${from}`)})`;
    const named = (list) =>
      `{${list
        .split(',')
        .filter(Boolean)
        .map((s) => s.replace(' as ', ':'))
        .join(',')}}`;
    clause = clause.trim();
    let m;
    if ((m = /^\*as ([\w$]+)$/.exec(clause))) consts.push(`const ${m[1]}=${module};`);
    else if ((m = /^([\w$]+),\{([^}]*)\}$/.exec(clause))) consts.push(`const ${m[1]}=${module},${named(m[2])}=${m[1]};`);
    else if ((m = /^\{([^}]*)\}$/.exec(clause))) consts.push(`const ${named(m[1])}=${module};`);
    else consts.push(`const ${clause}=${module};`);
    return '';
  });
  if (consts.length !== expected) throw new Error(`${file}: rewrote ${consts.length} imports of built-in modules, the metafile lists ${expected}`);
  const banner = rewritten.indexOf('\n') + 1; // after the createRequire banner
  return rewritten.slice(0, banner) + consts.join('') + rewritten.slice(banner);
}

// The `agentctl/adk` package export: its own bundle and typed declarations.
await buildAdk();

// The web console (dist/console/), served by the server under /console/; prints its bundle budget.
await buildConsole(root);

// openapi.json from the endpoint table, exactly what GET /openapi.json serves.
const tmp = path.join(dist, '.openapi-build.mjs');
await build({
  absWorkingDir: root,
  entryPoints: ['src/contract/openapi.ts'],
  outfile: tmp,
  bundle: true,
  format: 'esm',
  platform: 'node',
  target: 'node22',
  logLevel: 'warning',
});
const { buildOpenApiDocument } = await import(pathToFileURL(tmp).href);
rmSync(tmp);
writeFileSync(path.join(root, 'openapi.json'), `${JSON.stringify(buildOpenApiDocument(pkg.version), null, 2)}\n`);

// Completion scripts, from the registry of the CLI just built.
mkdirSync(path.join(root, 'completions'), { recursive: true });
for (const [shell, file] of [
  ['bash', 'agentctl.bash'],
  ['zsh', '_agentctl'],
  ['fish', 'agentctl.fish'],
]) {
  const script = execFileSync(process.execPath, [path.join(dist, 'agentctl.js'), 'completion', shell], { encoding: 'utf8' });
  writeFileSync(path.join(root, 'completions', file), script);
}
console.log('built dist/agentctl.js, dist/adk/, dist/console/, openapi.json and completions/');
