// The warm start of `agentctl dev`: shortly after each start the runner starts the next process. Its
// preload loads Node and the modules every start loads the same (the ADK, undici), then waits on a
// pipe for the save. The go line carries the port; only then does Node load the entry, so the
// process runs the files as they are at the save, and the time of a restart is the agent's own code.
import { mkdirSync, readFileSync, realpathSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { PROCESS_ENV } from '../../contract/acp.js';

/** The file descriptor of the go pipe (after the lifeline's): the process writes `warm` on it once loaded, the runner the go line. */
export const GO_FD = 4;

/**
 * The preload source: imports `warm` (failures are left to the entry, which imports them again and
 * shows the error), with the ADK's first-use modules (\`adk.warmUp()\`), says `warm`, then waits for the go line `{"port": N}`. End of
 * file without one (the runner dropped the spare, or dev is gone) ends the process.
 */
export function warmSource(warm: string[]): string {
  return `// agentctl dev: load what every start loads, then wait for the save.
import { writeFileSync } from 'node:fs';
import { Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
for (const url of ${JSON.stringify(warm)}) {
  try {
    // A TypeScript file is there to load Node's type stripper (a WebAssembly module). Node's compile
    // cache keeps stripped TypeScript by file and content: the same file a second time (once a process
    // that stripped it has exited) is a hit, the stripper would stay unloaded, and the entry would load
    // it after the save. A line of its own per process makes it a miss.
    if (/\\.[mc]?ts$/.test(url)) writeFileSync(fileURLToPath(url), \`export const warm: boolean = true; // \${process.pid} \${Date.now()}\\n\`);
    const loaded = await import(url);
    // The ADK: what it loads on its first request too.
    await loaded.adk?.warmUp?.();
  } catch {}
}
const line = await new Promise((resolve) => {
  const go = new Socket({ fd: ${GO_FD}, readable: true, writable: true });
  // Loaded: the runner may count on this process for the next save.
  go.write('warm\\n', () => {});
  let buffered = '';
  go.setEncoding('utf8');
  go.on('data', (chunk) => {
    buffered += chunk;
    const end = buffered.indexOf('\\n');
    if (end >= 0) { go.destroy(); resolve(buffered.slice(0, end)); }
  });
  go.on('error', () => resolve(''));
  go.on('end', () => resolve(''));
});
if (!line) process.exit(0);
process.env[${JSON.stringify(PROCESS_ENV.port)}] = String(JSON.parse(line).port);
`;
}

/**
 * What an agent in `root` loads on every start, as the file URLs Node resolves them to: a TypeScript
 * file when the entry is one (Node's type stripping), the ADK
 * (`agentctl/adk` from the agent's node_modules, symbolic links resolved as Node resolves them),
 * whose `warmUp()` loads what it would load on its first request.
 */
export function warmModules(root: string, entry: string, stateDir: string): string[] {
  const urls: string[] = [];
  // Node's type stripping loads on the first .ts file it runs: a one-line one, now.
  if (/\.[mc]?ts$/.test(entry)) {
    mkdirSync(stateDir, { recursive: true });
    const typed = path.join(stateDir, 'warm-types.ts');
    writeFileSync(typed, 'export const warm: boolean = true;\n');
    urls.push(pathToFileURL(typed).href);
  }
  try {
    const pkgDir = path.join(root, 'node_modules', 'agentctl');
    const pkg = JSON.parse(readFileSync(path.join(pkgDir, 'package.json'), 'utf8')) as { exports?: Record<string, { import?: string }> };
    const adkEntry = pkg.exports?.['./adk']?.import;
    if (!adkEntry) return urls;
    const adk = realpathSync(path.join(pkgDir, adkEntry));
    urls.push(pathToFileURL(adk).href);
    return urls;
  } catch {
    return urls;
  }
}
