/**
 * The preload (`node --import`) of every agent process: file descriptor 3 is one end of a socket
 * pair whose other end only the server holds. When the server goes away, however it goes (SIGKILL
 * included), the kernel closes its end, this side reads end-of-file, and the agent's whole process
 * group gets SIGTERM, then SIGKILL after a grace. It needs nothing from the agent's code.
 * The agent's stdout and stderr are pipes the server reads: once it is gone a write fails (EPIPE),
 * which would crash the agent in the middle of that grace, its running handlers unfinished; the
 * lines have nowhere to go, so the failure is ignored.
 * It also turns on Node's compile cache (NODE_COMPILE_CACHE, else the system's temporary directory;
 * NODE_DISABLE_COMPILE_CACHE turns it off): an agent started again (a save under `agentctl dev`, a
 * replica's restart) skips compiling the ADK and undici it compiled last time.
 */
export const LIFELINE_FD = 3;
export const LIFELINE_GRACE_MS = 5_000;

export const LIFELINE_SOURCE = `// agentctl lifeline: exit when the server that started this process is gone.
import { Socket } from 'node:net';
import { enableCompileCache } from 'node:module';
enableCompileCache?.();
const lifeline = new Socket({ fd: ${LIFELINE_FD}, readable: true, writable: false });
lifeline.unref();
lifeline.on('data', () => {});
lifeline.on('error', () => {});
process.stdout.on('error', () => {});
process.stderr.on('error', () => {});
let ending = false;
const end = () => {
  if (ending) return;
  ending = true;
  const group = -process.pid;
  try { process.kill(group, 'SIGTERM'); } catch { process.kill(process.pid, 'SIGTERM'); }
  setTimeout(() => {
    try { process.kill(group, 'SIGKILL'); } catch { process.exit(1); }
  }, ${LIFELINE_GRACE_MS}).unref();
};
lifeline.on('end', end);
lifeline.on('close', end);
`;
