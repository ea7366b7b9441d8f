#!/usr/bin/env node
// Launcher. First the Node version, in syntax any Node parses: the dependencies fail in obscure
// ways on an older one (`TEXT_ENCODINGS.union is not a function`), so say what to install instead.
// process.getBuiltinModule, not `import ... from 'node:fs'` nor createRequire: the ESM facade of a
// built-in and the CommonJS loader each cost a few percent of a short command (scripts/build.mjs,
// withoutBuiltinFacades). A Node without it (before 22.3) is too old anyway: any way will do there.
const fs = process.getBuiltinModule ? process.getBuiltinModule('node:fs') : await import('node:fs');
const module = process.getBuiltinModule ? process.getBuiltinModule('node:module') : (await import('node:module')).default;
const range = JSON.parse(fs.readFileSync(new URL('../package.json', import.meta.url), 'utf8')).engines.node;
if (!satisfies(process.versions.node, range)) {
  process.stderr.write(
    `agentctl needs Node.js ${range.split('||').map(describe).join(', or ')}; this is Node.js ${process.versions.node}.\n` +
      'Install Node.js 24 LTS (https://nodejs.org, or: nvm install 24 / fnm install 24 / volta install node@24) and run agentctl again.\n',
  );
  process.exit(1);
}

// Node's compile cache makes every start after the first skip parsing the bundle.
module.enableCompileCache?.();
// The bundle's chunks import each other by relative path, all ES modules in dist/: resolving those
// needs none of Node's general work (realpath, package.json scope, format detection), measured at a
// few percent of a short command's start-up.
const dist = new URL('../dist/', import.meta.url).href;
module.registerHooks?.({
  resolve(specifier, context, nextResolve) {
    if (specifier.startsWith('./') && context.parentURL?.startsWith(dist))
      return { url: new URL(specifier, context.parentURL).href, format: 'module', shortCircuit: true };
    return nextResolve(specifier, context);
  },
});
await import('../dist/agentctl.js');

/** `^22.22.2` as "22.22.2 or a later 22.x", `>=26.0.0` as "26.0.0 or later". */
function describe(part) {
  const [, op, version] = /(\^|>=)\s*(\S+)/.exec(part) ?? [undefined, '', part.trim()];
  return op === '^' ? `${version} or a later ${version.split('.')[0]}.x` : `${version} or later`;
}

/** `^a.b.c` and `>=a.b.c` alternatives joined by `||`: all package.json's `engines.node` uses. */
function satisfies(version, range) {
  const parse = (text) => text.split('.').map(Number);
  const compare = (a, b) => a[0] - b[0] || a[1] - b[1] || a[2] - b[2];
  const have = parse(version);
  return range.split('||').some((part) => {
    const match = /^\s*(\^|>=)\s*(\d+\.\d+\.\d+)\s*$/.exec(part);
    if (!match) return false;
    const want = parse(match[2]);
    return compare(have, want) >= 0 && (match[1] === '>=' || have[0] === want[0]);
  });
}
