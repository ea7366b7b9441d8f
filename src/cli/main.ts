// The process entry of the bundled CLI: the only place that touches process.exit.
import { InterruptedError } from './errors.js';

const argv = process.argv.slice(2);
// `--version` alone needs neither commander nor the registry: answer before loading them.
if (argv.length === 1 && (argv[0] === '--version' || argv[0] === '-v')) {
  const { VERSION } = await import('./version.js');
  process.stdout.write(`${VERSION}\n`);
  process.exit(0);
}
// The completion scripts' hidden `__complete` runs on every TAB: it needs neither commander nor the registry.
if (argv[0] === '__complete') {
  const { complete } = await import('./complete.js');
  process.exit(await complete(argv.slice(1), { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin, env: process.env, cwd: process.cwd() }));
}
const { run } = await import('./program.js');

const controller = new AbortController();
const exitCodes = { SIGINT: 130, SIGTERM: 143 } as const;
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.on(signal, () => {
    // A second signal, or a command that does not stop within 10 s, ends the process at once.
    if (controller.signal.aborted) process.exit(exitCodes[signal]);
    controller.abort(new InterruptedError(signal));
    setTimeout(() => process.exit(exitCodes[signal]), 10_000).unref();
  });
}

// A reader that went away (`agentctl tasks watch T | head -1`) is not an error: stop quietly.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(0);
  throw error;
});
// stdin and stderr are made on first use: each is a stream Node builds on access (a terminal's loads
// node:tty), and most runs never read stdin nor write to stderr.
const io = {
  stdout: process.stdout,
  get stderr() {
    return process.stderr;
  },
  get stdin() {
    return process.stdin;
  },
  env: process.env,
  cwd: process.cwd(),
};
const code = await run(argv, io, { signal: controller.signal });
process.exit(code);
