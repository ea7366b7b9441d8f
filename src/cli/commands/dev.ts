import { existsSync } from 'node:fs';
import { mkdir, symlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import { ApiRequestError } from '../../client/errors.js';
import type { Client } from '../../client/index.js';
import { PROCESS_ENV } from '../../contract/acp.js';
import type { PulledDelivery, StreamRecord } from '../../contract/conversation.js';
import { DEFAULT_ACP_TYPE, DEV_BRANCH_PREFIX, DEV_IMAGE_PREFIX, PULL_DELIVERY_SSE_EVENT, PULL_OPEN_SSE_EVENT } from '../../contract/enums.js';
import { isTerminalTask } from '../../contract/lifecycle.js';
import { versionLabel } from '../../contract/version-ref.js';
import { defineCommand } from '../command.js';
import type { CommandContext } from '../context.js';
import { AgentRunner, type AgentAnswer } from '../dev/runner.js';
import { removeDevSession, writeDevSession } from '../dev/session-file.js';
import { warmModules } from '../dev/warm.js';
import { watchTree } from '../dev/watch.js';
import { CliError } from '../errors.js';
import { ExitCode } from '../exit-codes.js';
import { packageRoot } from '../package-root.js';
import { readProjectFile } from '../project-file.js';
import { parseAgentPath } from '../refs.js';
import { agentctl } from '../shell.js';
import { contentText, handlerErrorOf } from './tasks/conversation.js';
import { VERSION } from '../version.js';

/** Reconnect delays of the dev stream: from this, doubling, up to the cap. */
const RECONNECT_BASE_MS = 250;
const RECONNECT_MAX_MS = 5_000;

export default defineCommand({
  path: ['dev'],
  summary: 'Run the agent of this directory from its work tree as the dev version of your dev/<user> branch, restarting it on save',
  description:
    'No commit, no deploy: the agent runs here, as a child process, and serves a dev version on the branch dev/<git user.name or $USER>. Its deliveries come over a stream this command opens to the server (the server never connects to this machine), so it works against a remote server as well as a local one. `tasks create` run in this directory while dev runs creates tasks on the dev branch. A save restarts the agent; a process that fails to start (a syntax error) leaves the last good one serving. Ctrl-C stops the agent and retires the dev version (its tasks are terminated); --keep leaves the version and its tasks for the next `agentctl dev`.',
  options: [
    { flags: '--keep', description: 'On exit, keep the dev version and its tasks (the next `agentctl dev` takes them over) instead of retiring it' },
    { flags: '--user <name>', description: 'The dev branch is dev/<name> (default: git user.name, else $USER)' },
  ],
  examples: ['agentctl dev', 'agentctl dev --keep', 'agentctl dev --user ada --json'],
  handler: async (ctx, _args, options) => {
    const root = ctx.io.cwd;
    const project = await readProjectFile(root);
    if (!project) {
      throw new CliError(`No agentctl.json in ${root}: agentctl dev runs the agent of the directory it is started in`, {
        exitCode: ExitCode.usage,
        code: 'usage',
        hint: 'Make a new agent with `agentctl init <dir>` and run dev inside it, or add an agentctl.json ({"agent": "default/my-bot", "entry": "src/index.ts"}) to an existing one.',
        next: agentctl('init', 'my-bot'),
      });
    }
    const agentRef = parseAgentPath(project.agent);
    const agentName = `${agentRef.namespace_slug}/${agentRef.agent_name}`;
    const user = slug(options.user ?? (await gitUser(root)) ?? ctx.env.USER ?? ctx.env.USERNAME ?? os.userInfo().username);
    const branch = `${DEV_BRANCH_PREFIX}${user}`;
    const credentials = ctx.credentials();
    await linkAdk(root);

    // The dev version: registered like an external runtime's (a one-time token, an address), and
    // marked dev:// so nothing pushes to it and no runtime driver starts it.
    const git = await gitState(root, user);
    const deployed = await ctx.call('deploy', {
      body: {
        namespace: agentRef.namespace_slug,
        agent_name: agentRef.agent_name,
        branch,
        git_hash: git.hash,
        git_message: git.message,
        author_name: git.authorName,
        author_email: git.authorEmail,
        image_url: `${DEV_IMAGE_PREFIX}${user}@${slug(os.hostname())}`,
        acp_type: project.acp_type ?? DEFAULT_ACP_TYPE,
        is_dirty: true,
        replicas: 1,
        are_tasks_sticky: false,
        description: project.description,
        source_filesystem_id: null,
      },
    });
    const { version_id: versionId, branch_id: branchId } = deployed.data;
    const { data: token } = await ctx.call('createRegistrationToken', { params: { version_id: versionId } });
    const { data: secret } = await ctx.call('getSigningSecret', { params: { version_id: versionId } });
    const { createClient } = await import('../../client/index.js');
    // Anonymous: the token is the credential; the answer is a runtime key confined to this agent.
    const anonymous = createClient({ baseUrl: credentials.baseUrl, userAgent: `agentctl/${VERSION}` });
    const acpUrl = `http://${user}.dev.invalid/${process.pid}`;
    const registered = await anonymous.request('registerVersion', {
      body: {
        version_id: versionId,
        branch_id: branchId,
        acp_url: acpUrl,
        registration_token: token.registration_token,
        status: 'ACTIVE',
      },
    });
    const runtimeKey = (registered.data as { agent_api_key?: string }).agent_api_key;
    if (!runtimeKey) throw new CliError(`${credentials.baseUrl} registered the dev version but returned no runtime key`);
    const { data: version } = await ctx.call('getVersion', { params: { version_id: versionId } });

    // Long-lived calls (answers, the stream, the task streams, the retirement after Ctrl-C) must
    // outlive the command's abort signal, so they use a client of their own.
    const session = createClient({ baseUrl: credentials.baseUrl, apiKey: credentials.apiKey, userAgent: `agentctl/${VERSION}`, retries: 3 });
    const print = printer(ctx);
    const stateDir = path.join(os.tmpdir(), `agentctl-dev-${process.getuid?.() ?? 'user'}`, versionId);
    const runner = new AgentRunner({
      root,
      entry: project.entry,
      build: project.build,
      stateDir,
      warm: warmModules(root, project.entry, stateDir),
      env: agentEnv(project.env, {
        [PROCESS_ENV.baseUrl]: credentials.baseUrl,
        [PROCESS_ENV.versionId]: versionId,
        [PROCESS_ENV.branchId]: branchId,
        [PROCESS_ENV.signingSecret]: secret.signing_secret,
        [PROCESS_ENV.dataRoot]: path.join(stateDir, 'data'),
        [PROCESS_ENV.replica]: '0',
        // The runtime key of the registration above: the agent's calls are confined to its agent.
        AGENTCTL_API_KEY: runtimeKey,
      }),
      output: (pid, stream, line) => print.log(pid, stream, line),
      note: (kind, text) => print.note(kind, text),
      debug: ctx.globals.debug ? (text) => print.note('info', text) : undefined,
      answer: (delivery, answer) => reportAnswer(session, delivery, answer),
    });

    print.note('ok', `${agentName} ${versionLabel(version.number)} (${versionId}) serves ${branch} from ${root}`);
    print.note(
      'info',
      `Tasks created in this directory while dev runs go to ${branch}: ${agentctl('tasks', 'create')}, then ${agentctl('tasks', 'send', '<task>', 'hello')} (--branch main for the deployed agent). Ctrl-C stops${options.keep ? ' and keeps the dev version' : ' and retires the dev version'}.`,
    );
    writeDevSession(ctx.env, root, {
      pid: process.pid,
      agent: agentName,
      branch,
      version_id: versionId,
      base_url: credentials.baseUrl,
      started_at: new Date().toISOString(),
    });

    const stop = new AbortController();
    const ended = new Promise<string | undefined>((resolve) => {
      ctx.signal.addEventListener('abort', () => resolve(undefined), { once: true });
      stop.signal.addEventListener('abort', () => resolve(String(stop.signal.reason ?? 'stopped')), { once: true });
    });
    const follower = new TaskFollower(session, print, stop.signal);
    const pulling = pullDeliveries(session, versionId, print, stop.signal, ctx.signal, (delivery) => {
      follower.saw(delivery);
      runner.deliver(delivery);
    }).catch((error: Error) => stop.abort(error.message));
    const unwatch = await watchTree(root, (paths) => void runner.reload(`${paths.slice(0, 3).join(', ')}${paths.length > 3 ? ', ...' : ''} changed`));
    await runner.reload('dev');

    const fatal = await ended;
    unwatch();
    if (!stop.signal.aborted) stop.abort('Ctrl-C');
    await runner.stop();
    await pulling;
    removeDevSession(ctx.env, root, process.pid);
    // The runtime key goes with the process it was made for (--keep or not): it revokes itself.
    const runtime = createClient({ baseUrl: credentials.baseUrl, apiKey: runtimeKey, userAgent: `agentctl/${VERSION}`, retries: 3 });
    try {
      await runtime.request('deregisterReplica', { params: { version_id: versionId }, body: { acp_url: acpUrl } });
    } catch (error) {
      print.note('error', `could not revoke the dev runtime key at ${credentials.baseUrl}: ${(error as Error).message}`);
    }
    if (!options.keep) {
      try {
        await session.request('retireBranch', { params: { branch_id: branchId }, body: { reason: 'agentctl dev ended', force: true } });
        print.note('ok', `Stopped; ${branch} retired (${versionLabel(version.number)} RETIRED)`);
      } catch (error) {
        print.note('error', `Stopped, but ${branch} could not be retired: ${(error as Error).message}`);
      }
    } else {
      print.note('ok', `Stopped; ${versionLabel(version.number)} and its tasks stay on ${branch} for the next agentctl dev`);
    }
    if (fatal) throw new CliError(`agentctl dev ended: ${fatal}`);
    return { exitCode: ExitCode.ok };
  },
});

/** Reports what the agent answered, under the delivery's claim; retried by the client on 429/503/connection errors. */
async function reportAnswer(client: Client, delivery: PulledDelivery, answer: AgentAnswer): Promise<void> {
  const body = 'error' in answer ? { claim: delivery.claim, error: answer.error.slice(0, 1000) } : { claim: delivery.claim, ...answer };
  await client.request('answerDelivery', { params: { delivery_id: delivery.delivery_id }, body });
}

/**
 * The dev stream: open until stopped, reconnecting with backoff whenever it drops (the server
 * restarted, the network went). Deliveries the server sent on a dropped stream and got no answer
 * for come again on the next one. A refusal (the version was retired, the key revoked) ends dev.
 */
async function pullDeliveries(
  client: Client,
  versionId: string,
  print: Printer,
  stop: AbortSignal,
  interrupted: AbortSignal,
  onDelivery: (delivery: PulledDelivery) => void,
): Promise<void> {
  let failures = 0;
  const signal = AbortSignal.any([stop, interrupted]);
  while (!signal.aborted) {
    let failure = 'the server ended the stream';
    try {
      for await (const event of client.streamVersionDeliveries(versionId, { signal })) {
        if (event.event === PULL_OPEN_SSE_EVENT) {
          if (failures > 0) print.note('ok', `reconnected to ${client.baseUrl}; deliveries flow again`);
          failures = 0;
        } else if (event.event === PULL_DELIVERY_SSE_EVENT) {
          onDelivery(JSON.parse(event.data) as PulledDelivery);
        }
      }
    } catch (error) {
      if (error instanceof ApiRequestError && error.status >= 400 && error.status < 500 && error.status !== 429) {
        throw new Error(`the server refused the dev stream (${error.status} ${error.code}): ${error.detail}`);
      }
      failure = (error as Error).message;
    }
    if (signal.aborted) return;
    failures += 1;
    const delay = Math.min(RECONNECT_BASE_MS * 2 ** (failures - 1), RECONNECT_MAX_MS);
    print.note('error', `lost the dev stream from ${client.baseUrl} (${failure}); reconnecting in ${(delay / 1000).toFixed(1)} s`);
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, delay);
      signal.addEventListener(
        'abort',
        () => {
          clearTimeout(timer);
          resolve();
        },
        { once: true },
      );
    });
  }
}

/** Follows the conversation of every task the dev version is handed, printing it beside the agent's logs. */
class TaskFollower {
  private readonly following = new Set<string>();
  private readonly shown = new Set<string>();

  constructor(
    private readonly client: Client,
    private readonly print: Printer,
    private readonly signal: AbortSignal,
  ) {}

  saw(delivery: PulledDelivery): void {
    if (this.following.has(delivery.task_id)) return;
    let params: { task?: { id: string; name?: string | null }; event?: { sequence_id: number } };
    try {
      params = (JSON.parse(delivery.body) as { params: typeof params }).params;
    } catch {
      return;
    }
    const label = params.task?.name || delivery.task_id;
    // A new task from its start; one handed over (kept from a previous dev) from this event on.
    const after = delivery.method === 'task/create' ? 0 : Math.max(0, (params.event?.sequence_id ?? 1) - 1);
    this.following.add(delivery.task_id);
    void this.follow(delivery.task_id, label, after).finally(() => this.following.delete(delivery.task_id));
  }

  private async follow(taskId: string, label: string, after: number): Promise<void> {
    try {
      for await (const record of this.client.streamTask(taskId, {
        afterSequenceId: after,
        signal: this.signal,
        maxReconnects: Infinity,
      }) as AsyncGenerator<StreamRecord>) {
        this.show(label, record);
        if (record.kind === 'task' && isTerminalTask(record.data.status)) return;
      }
    } catch {
      // Stopped (Ctrl-C), or the task went away: nothing more to show.
    }
  }

  private show(label: string, record: StreamRecord): void {
    switch (record.kind) {
      case 'event':
        this.print.conversation(label, record, `→ ${contentText(record.data.content)}`);
        break;
      case 'message':
      case 'message_update': {
        const message = record.data;
        if (message.streaming_status === 'IN_PROGRESS' || this.shown.has(message.id)) return;
        this.shown.add(message.id);
        const error = handlerErrorOf(message.content);
        const text = error ? `handler error (${error.handler}): ${error.message}` : contentText(message.content);
        this.print.conversation(label, record, `${message.author === 'user' ? '→' : '←'} ${text}`);
        break;
      }
      case 'task':
        this.print.conversation(label, record, `status ${record.data.status}${record.data.status_reason ? ` (${record.data.status_reason})` : ''}`);
        break;
      default:
        break;
    }
  }
}

interface Printer {
  log(pid: number, stream: 'stdout' | 'stderr', line: string): void;
  conversation(label: string, record: StreamRecord, text: string): void;
  note(kind: 'info' | 'ok' | 'error', text: string): void;
}

/**
 * Everything on one time line, each line labelled: `agent` (what the process writes), the task's
 * name or id (its conversation), `dev` (restarts, failures, the connection). --json: JSON Lines.
 */
function printer(ctx: CommandContext): Printer {
  const { stdout, stderr } = ctx.io;
  const c = ctx.chalk;
  const json = ctx.globals.json;
  const line = (stream: typeof stdout, object: Record<string, unknown>, label: string, text: string) =>
    stream.write(json ? `${JSON.stringify({ time: new Date().toISOString(), ...object })}\n` : `${label} │ ${text}\n`);
  return {
    log: (pid, stream, text) => line(stdout, { kind: 'log', pid, stream, line: text }, c.cyan(`agent ${pid}`), stream === 'stderr' ? c.yellow(text) : text),
    conversation: (label, record, text) => line(stdout, { kind: 'conversation', task: label, record }, c.magenta(label), text),
    note: (kind, text) => {
      if (json) return void line(stdout, { kind: 'dev', level: kind, text }, '', text);
      const glyph = kind === 'ok' ? c.green('✓') : kind === 'error' ? c.red('✗') : c.dim('·');
      stderr.write(`${c.bold('dev')} │ ${glyph} ${text}\n`);
    },
  };
}

/** The developer's environment (their model provider keys and all) minus agentctl's own settings, then agentctl.json's, then the process contract. */
function agentEnv(projectEnv: Record<string, string>, contract: Record<string, string>): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) if (value !== undefined && !name.startsWith('AGENTCTL_')) env[name] = value;
  return { ...env, ...projectEnv, ...contract };
}

const slug = (name: string) =>
  name
    .normalize('NFKD')
    .toLowerCase()
    .replace(/[^a-z0-9-]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 40) || 'dev';

async function gitUser(root: string): Promise<string | undefined> {
  try {
    return (await execa('git', ['config', 'user.name'], { cwd: root, stripFinalNewline: true })).stdout || undefined;
  } catch {
    return undefined;
  }
}

/** The commit the work tree is based on (what the version records); a directory outside git runs as well. */
async function gitState(root: string, user: string): Promise<{ hash: string; message: string; authorName: string; authorEmail: string }> {
  const git = (args: string[]) => execa('git', args, { cwd: root, stripFinalNewline: true });
  try {
    const [hash, subject, authorName, authorEmail] = (await git(['log', '-1', '--format=%H%x00%s%x00%an%x00%ae'])).stdout.split('\0');
    return { hash, message: `dev: work tree on ${subject}`, authorName, authorEmail };
  } catch {
    return { hash: '0000000', message: 'dev: work tree (no git commit)', authorName: user, authorEmail: `${user}@localhost` };
  }
}

/** `node_modules/agentctl` links this agentctl (as `init` makes it) so the agent's `agentctl/adk` import resolves. */
async function linkAdk(root: string): Promise<void> {
  const link = path.join(root, 'node_modules', 'agentctl');
  if (existsSync(link)) return;
  await mkdir(path.dirname(link), { recursive: true });
  await symlink(packageRoot(), link, 'dir').catch(() => {});
}
