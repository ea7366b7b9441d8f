// The web console's bundle (src/console/, README "Web console"): Preact and the typed client for the
// browser, into dist/console/ with hashed names (served immutable) and an index.html naming them.
// Each asset is also written gzipped, which the server sends when asked. Prints the budget: the
// page's first download (index.html, the entry script, its static imports and the stylesheet,
// gzipped) must stay within 150 KB.
import { build } from 'esbuild';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { gzipSync } from 'node:zlib';

export const CONSOLE_BUDGET_BYTES = 150 * 1024;

/**
 * The client's default stream reader loads undici (client/stream.ts); the console passes a
 * fetch-based opener instead, so that import must not pull Node modules into the browser bundle.
 */
const noNodeStream = {
  name: 'console-no-node-stream',
  setup(b) {
    b.onResolve({ filter: /^\.\/(stream|undici-transport)\.js$/ }, (args) =>
      args.importer.includes(`${path.sep}src${path.sep}client${path.sep}`) ? { path: args.path, namespace: 'console-stub' } : undefined,
    );
    b.onLoad({ filter: /.*/, namespace: 'console-stub' }, () => ({
      contents: "export function streamTask() { throw new Error('the console streams through fetchStreamOpener'); }",
      loader: 'js',
    }));
  },
};

export async function buildConsole(root) {
  const out = path.join(root, 'dist', 'console');
  const assets = path.join(out, 'assets');
  mkdirSync(assets, { recursive: true });
  const result = await build({
    absWorkingDir: root,
    entryPoints: { console: 'src/console/main.tsx' },
    outdir: assets,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'browser',
    target: ['chrome111', 'firefox115', 'safari16.4'],
    jsx: 'automatic',
    jsxImportSource: 'preact',
    entryNames: '[name]-[hash]',
    chunkNames: 'chunk-[hash]',
    assetNames: '[name]-[hash]',
    minify: true,
    legalComments: 'none',
    metafile: true,
    plugins: [noNodeStream],
    logLevel: 'warning',
  });
  const outputs = result.metafile.outputs;
  const entry = Object.keys(outputs).find((f) => outputs[f].entryPoint === 'src/console/main.tsx');
  const css = outputs[entry].cssBundle;
  if (!entry || !css) throw new Error('console build: no entry script or stylesheet in the metafile');
  // Nothing of Node may reach the page.
  const nodeInputs = Object.keys(result.metafile.inputs).filter((i) => /node_modules\/(undici|zod)\//.test(i) || i.startsWith('node:'));
  const firstLoad = new Set([entry, css]);
  const walk = (file) => {
    for (const i of outputs[file]?.imports ?? []) if (i.kind === 'import-statement' && !firstLoad.has(i.path)) firstLoad.add(i.path) && walk(i.path);
  };
  walk(entry);
  const zodFirst = [...firstLoad].filter((f) => Object.keys(outputs[f]?.inputs ?? {}).some((i) => i.includes('node_modules/zod/')));
  if (zodFirst.length) throw new Error(`console build: zod is in the first download (${zodFirst.join(', ')}); import zod-free contract modules`);
  if (nodeInputs.some((i) => i.includes('undici'))) throw new Error('console build: undici reached the browser bundle');

  const html = readFileSync(path.join(root, 'src', 'console', 'index.html'), 'utf8')
    .replace('%JS%', path.basename(entry))
    .replace('%CSS%', path.basename(css));
  writeFileSync(path.join(out, 'index.html'), html);
  let total = gzipSync(html).length;
  for (const file of Object.keys(outputs)) {
    const body = readFileSync(path.join(root, file));
    const gz = gzipSync(body, { level: 9 });
    writeFileSync(path.join(root, `${file}.gz`), gz);
    if (firstLoad.has(file)) total += gz.length;
  }
  const kb = (n) => `${(n / 1024).toFixed(1)} KB`;
  console.log(`console: first download ${kb(total)} gzipped of a ${kb(CONSOLE_BUDGET_BYTES)} budget (${firstLoad.size} files + index.html)`);
  if (total > CONSOLE_BUDGET_BYTES) throw new Error(`console build: the first download is ${kb(total)} gzipped, over the ${kb(CONSOLE_BUDGET_BYTES)} budget`);
  return { firstDownloadBytes: total };
}
