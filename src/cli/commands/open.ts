import { defineCommand } from '../command.js';
import type { Client } from '../../client/index.js';
import { CONSOLE_PATH } from '../../contract/console-constants.js';
import { text } from '../output/view.js';
import { resolveAgent, resolveTaskId } from '../refs.js';

/**
 * The console path of a resource: a task (task_ id or name), a version (ver_ id), an agent (agt_ id
 * or namespace/name), or one of the lists (agents, tasks, keys). Nothing: the overview.
 */
async function consolePath(client: Client, ref: string | undefined): Promise<string> {
  const base = CONSOLE_PATH.replace(/\/$/, '');
  if (!ref) return `${base}/`;
  if (['agents', 'tasks', 'keys'].includes(ref)) return `${base}/${ref}`;
  if (ref.startsWith('ver_')) return `${base}/versions/${(await client.getVersion({ params: { version_id: ref } })).id}`;
  if (ref.startsWith('agt_') || ref.includes('/')) return `${base}/agents/${(await resolveAgent(client, ref)).id}`;
  return `${base}/tasks/${await resolveTaskId(client, ref)}`;
}

/** A browser can be started here: a desktop session on Linux, or macOS or Windows. */
const canOpenBrowser = (env: Record<string, string | undefined>) =>
  process.platform === 'darwin' || process.platform === 'win32' || Boolean(env.DISPLAY || env.WAYLAND_DISPLAY);

/** Starts the system's browser on `url`; false when it could not be started. */
async function openBrowser(url: string): Promise<boolean> {
  const { spawn } = process.getBuiltinModule('node:child_process') as typeof import('node:child_process');
  const [command, args] =
    process.platform === 'darwin'
      ? ['open', [url]]
      : process.platform === 'win32'
        ? ['cmd', ['/c', 'start', '""', url.replaceAll('&', '^&')]]
        : ['xdg-open', [url]];
  return new Promise((resolve) => {
    const child = spawn(command, args as string[], { stdio: 'ignore', detached: true });
    child.once('error', () => resolve(false));
    child.once('spawn', () => {
      child.unref();
      resolve(true);
    });
  });
}

export default defineCommand({
  path: ['open'],
  summary: 'Open the web console (signed in with this profile’s key) at a task, version or agent',
  description:
    'Asks the server for a one-time sign-in link for the profile’s key (it works once, for two minutes) and opens it in your browser; ' +
    'the console then keeps a session of its own, and the key never enters the browser. With --print, or where no browser can be started ' +
    '(no DISPLAY), the link is printed instead.',
  args: [{ name: 'resource', description: 'task_ id or task name, ver_ id, agt_ id or namespace/name, or agents, tasks, keys' }],
  options: [{ flags: '--print', description: 'Print the link instead of opening a browser' }],
  examples: ['agentctl open', 'agentctl open task_01J...', 'agentctl open default/my-bot', 'agentctl open ver_01J... --print'],
  notFoundNext: 'agentctl tasks list',
  handler: async (ctx, [ref], options) => {
    const client = await ctx.client();
    const path = await consolePath(client, ref);
    const { data: link } = await ctx.call('createSignInToken');
    const url = `${client.baseUrl}${link.path}&next=${encodeURIComponent(path)}`;
    const opened = !options.print && !ctx.globals.json && canOpenBrowser(ctx.env) && (await openBrowser(url));
    if (opened) ctx.success(`Opened the console in your browser (the sign-in link works once, until ${link.expires_at})`);
    else if (!options.print && !ctx.globals.json) ctx.info(`No browser to open here: open this link (it works once, until ${link.expires_at})`);
    return { json: { url, path, expires_at: link.expires_at, opened }, view: opened ? undefined : text(url) };
  },
});
