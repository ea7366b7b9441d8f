import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { createAdk, ConflictError, NotFoundError, ValidationError, type Adk } from '../../src/adk/index.js';
import { startDispatcher, type Dispatcher } from '../../src/server/delivery/dispatcher.js';
import { issueRegistrationToken, signingSecretFor } from '../../src/server/domain/registration.js';
import { buildAdkBundle, repoRoot, startAgentProcess, type AgentProcess } from '../support/agent-process.js';
import { createTask, deploy } from '../support/fixtures.js';
import { engines, useService } from '../support/service.js';
import { spawnAgentctl } from '../cli/built.js';

// The ADK against the real service: every module in-process, and the echo example as a real agent
// process registered with a one-time token, fed by the real dispatcher.

const echoDir = path.join(repoRoot, 'examples/echo');
const streamingDir = path.join(repoRoot, 'examples/streaming');

async function until<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not reached in ${timeoutMs} ms; last: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe.each(engines)('ADK against the service (%s)', (engine) => {
  const svc = useService(engine);
  let dispatcher: Dispatcher | undefined;
  let agent: AgentProcess | undefined;
  let dataRoot: string;
  let adk: Adk;

  beforeAll(async () => {
    buildAdkBundle();
    for (const dir of [echoDir, streamingDir]) {
      const link = path.join(dir, 'node_modules', 'agentctl');
      if (!existsSync(link)) {
        mkdirSync(path.dirname(link), { recursive: true });
        symlinkSync(repoRoot, link, 'dir');
      }
    }
  });
  beforeEach(async () => {
    dataRoot = mkdtempSync(path.join(tmpdir(), 'adk-it-'));
    adk = createAdk({ baseUrl: svc.url, apiKey: svc.adminKey, retries: 0 });
  });
  afterEach(async () => {
    await dispatcher?.close();
    dispatcher = undefined;
    agent?.stop();
    if (agent) await agent.exited;
    agent = undefined;
    rmSync(dataRoot, { recursive: true, force: true });
  });

  async function startEcho(versionId: string, branchId: string): Promise<AgentProcess> {
    agent = startAgentProcess(
      'src/index.ts',
      {
        AGENTCTL_BASE_URL: svc.url,
        AGENTCTL_VERSION_ID: versionId,
        AGENTCTL_BRANCH_ID: branchId,
        AGENTCTL_REGISTRATION_TOKEN: await issueRegistrationToken(svc.store.db, versionId),
        AGENTCTL_SIGNING_SECRET: await signingSecretFor(svc.store.db, versionId),
        AGENTCTL_DATA_ROOT: dataRoot,
        PORT: '0',
      },
      echoDir,
    );
    const a = agent;
    await until(
      'the echo agent listening',
      async () => a.stderr(),
      (text) => text.includes('listening on') || a.child.exitCode !== null,
    );
    expect(a.stderr()).toContain('agentctl-adk: listening on http://127.0.0.1:');
    expect(a.stderr()).toContain(' as default/support-bot');
    return a;
  }

  test('the echo agent, registered with a token, handles create, events and cancel: messages, state, tracker and workspace are as expected', async () => {
    const v1 = await deploy(svc);
    await startEcho(v1.version_id, v1.branch_id);
    expect((await svc.client().getVersion({ params: { version_id: v1.version_id } })).status).toBe('ACTIVE');
    dispatcher = await startDispatcher(svc.store, { backoffBaseMs: 20, backoffMaxMs: 200, pollMs: 100, requestTimeoutMs: 5000 });

    const task = await createTask(svc, { params: { topic: 'x' } });
    for (const text of ['hello', 'world']) await svc.client().createEvent({ params: { task_id: task.id }, body: { content: text } });
    const texts = (list: { messages: { content: { type: string; text?: string } }[] }) => list.messages.map((m) => m.content.text);
    const messages = await until(
      'three agent messages',
      () => adk.messages.list(task.id),
      (l) => l.messages.length === 3,
    );
    expect(texts(messages)).toEqual(['Hello! Send me anything about x and I will echo it.', 'echo #1: hello', 'echo #2: world']);
    expect(messages.messages.map((m) => m.author)).toEqual(['agent', 'agent', 'agent']);
    expect((await adk.state.get(task.id, v1.agent_id))?.state).toEqual({ events: 2 });
    const tracker = await until(
      'the tracker after two events',
      () => adk.agentTaskTracker.get(task.id, v1.agent_id),
      (t) => t.status_message === 'handled 2 events',
    );
    expect(tracker.progress).toBe(20);

    await svc.client().cancelTask({ params: { task_id: task.id } });
    const canceled = await until(
      'the tracker after cancel',
      () => adk.agentTaskTracker.get(task.id, v1.agent_id),
      (t) => t.status_message === 'canceled after 2 events',
    );
    expect(canceled.progress).toBe(20);
    // The workspace went up after each handler: the task's filesystem holds the last event's text.
    const file = await fetch(`${svc.url}/filesystems/${task.filesystem_id}/files/last-event.txt`, { headers: { authorization: `Bearer ${svc.adminKey}` } });
    expect(file.status).toBe(200);
    expect(await file.text()).toBe('world\n');
    expect(texts(await adk.messages.list(task.id))).toHaveLength(3);
  });

  test('a handler that throws is reported as a handler_error message of the task', async () => {
    const v1 = await deploy(svc);
    agent = startAgentProcess(path.join(repoRoot, 'test/fixtures/adk/protocol-agent.ts'), {
      AGENTCTL_BASE_URL: svc.url,
      AGENTCTL_VERSION_ID: v1.version_id,
      AGENTCTL_BRANCH_ID: v1.branch_id,
      AGENTCTL_REGISTRATION_TOKEN: await issueRegistrationToken(svc.store.db, v1.version_id),
      AGENTCTL_SIGNING_SECRET: await signingSecretFor(svc.store.db, v1.version_id),
      AGENTCTL_DATA_ROOT: dataRoot,
      PORT: '0',
    });
    await agent.waitFor((l) => l.phase === 'listening');
    dispatcher = await startDispatcher(svc.store, { backoffBaseMs: 20, backoffMaxMs: 200, pollMs: 100, requestTimeoutMs: 5000 });
    const task = await createTask(svc);
    const event = await svc.client().createEvent({ params: { task_id: task.id }, body: { content: { type: 'data', data: { throw: 'the model said no' } } } });
    const list = await until(
      'the handler error message',
      () => adk.messages.list(task.id),
      (l) => l.messages.length === 1,
    );
    expect(list.messages[0]!.content).toEqual({
      type: 'data',
      data: { handler_error: { handler: 'onEvent', message: 'the model said no', event_id: event.id } },
    });
  });

  test('ctx.state.update with no state yet merges into an empty one: two concurrent first updates both land, no handler error', async () => {
    const v1 = await deploy(svc);
    agent = startAgentProcess(path.join(repoRoot, 'test/fixtures/adk/protocol-agent.ts'), {
      AGENTCTL_BASE_URL: svc.url,
      AGENTCTL_VERSION_ID: v1.version_id,
      AGENTCTL_BRANCH_ID: v1.branch_id,
      AGENTCTL_REGISTRATION_TOKEN: await issueRegistrationToken(svc.store.db, v1.version_id),
      AGENTCTL_SIGNING_SECRET: await signingSecretFor(svc.store.db, v1.version_id),
      AGENTCTL_DATA_ROOT: dataRoot,
      PORT: '0',
    });
    await agent.waitFor((l) => l.phase === 'listening');
    dispatcher = await startDispatcher(svc.store, { backoffBaseMs: 20, backoffMaxMs: 200, pollMs: 100, requestTimeoutMs: 5000 });
    const task = await createTask(svc);
    const event = await svc
      .client()
      .createEvent({ params: { task_id: task.id }, body: { content: { type: 'data', data: { state_updates: [{ first: 1 }, { second: 2 }] } } } });
    const a = agent;
    const outcome = await until(
      'the handler to end or report an error',
      async () => ({
        ended: a.lines.some((l) => l.phase === 'end' && l.event === event.id),
        messages: (await adk.messages.list(task.id)).messages.map((m) => m.content),
      }),
      (o) => o.ended || o.messages.length > 0,
    );
    expect(outcome).toEqual({ ended: true, messages: [] });
    const state = await adk.state.get(task.id, v1.agent_id);
    expect(state?.state).toEqual({ first: 1, second: 2 });
    expect(state?.version).toBe(2);
    // The module-level update keeps its meaning: no state, no merge.
    const other = await createTask(svc);
    await expect(adk.state.update(other.id, v1.agent_id, { a: 1 })).rejects.toBeInstanceOf(NotFoundError);
  });

  test('ctx.messages.stream: a handler streams reasoning, a tool call, its result and an answer; deltas are coalesced and the records hold the concatenation', async () => {
    const v1 = await deploy(svc);
    agent = startAgentProcess(path.join(repoRoot, 'test/fixtures/adk/protocol-agent.ts'), {
      AGENTCTL_BASE_URL: svc.url,
      AGENTCTL_VERSION_ID: v1.version_id,
      AGENTCTL_BRANCH_ID: v1.branch_id,
      AGENTCTL_REGISTRATION_TOKEN: await issueRegistrationToken(svc.store.db, v1.version_id),
      AGENTCTL_SIGNING_SECRET: await signingSecretFor(svc.store.db, v1.version_id),
      AGENTCTL_DATA_ROOT: dataRoot,
      PORT: '0',
    });
    await agent.waitFor((l) => l.phase === 'listening');
    dispatcher = await startDispatcher(svc.store, { backoffBaseMs: 20, backoffMaxMs: 200, pollMs: 100, requestTimeoutMs: 5000 });
    const task = await createTask(svc);
    const tokens = Array.from({ length: 60 }, (_, i) => `tok${i} `);
    await svc.client().createEvent({ params: { task_id: task.id }, body: { content: { type: 'data', data: { stream_tokens: tokens } } } });
    const streamed = await agent.waitFor((l) => l.phase === 'streamed');
    // 60 tokens, far fewer requests: at most one starts per flush interval, one in flight.
    expect(streamed.requests).toBeLessThan(tokens.length / 4);
    const { messages } = await adk.messages.list(task.id);
    expect(messages.map((m) => [m.content, m.streaming_status])).toEqual([
      [{ type: 'reasoning', summary: 'Looking it up.' }, 'DONE'],
      [{ type: 'tool_request', name: 'lookup', call_id: 'call_1', arguments: '{"q":"weather"}' }, 'DONE'],
      [{ type: 'tool_response', call_id: 'call_1', result: { sky: 'clear' } }, null],
      [{ type: 'text', text: tokens.join('') }, 'DONE'],
    ]);
    // The stream rebuilds the same answer from its created item and deltas, each at its offset.
    let rebuilt = '';
    let deltas = 0;
    for await (const record of svc.client().streamTask(task.id)) {
      if (record.kind === 'message' && record.data.id === streamed.message && record.data.content.type === 'text') rebuilt = record.data.content.text;
      if (record.kind === 'message_delta' && record.data.message_id === streamed.message) {
        expect(record.data.offset).toBe(rebuilt.length);
        rebuilt += record.data.delta;
        deltas++;
      }
      if (record.kind === 'message_update' && record.data.id === streamed.message) break;
    }
    expect(rebuilt).toBe(tokens.join(''));
    expect(deltas).toBe(streamed.requests - 2);
  });

  test('the streaming example, watched live through the built CLI (piped): reasoning, the tool call, its result and the answer, each once and whole', async () => {
    const v1 = await deploy(svc);
    const a = (agent = startAgentProcess(
      'src/index.ts',
      {
        AGENTCTL_BASE_URL: svc.url,
        AGENTCTL_VERSION_ID: v1.version_id,
        AGENTCTL_BRANCH_ID: v1.branch_id,
        AGENTCTL_REGISTRATION_TOKEN: await issueRegistrationToken(svc.store.db, v1.version_id),
        AGENTCTL_SIGNING_SECRET: await signingSecretFor(svc.store.db, v1.version_id),
        AGENTCTL_DATA_ROOT: dataRoot,
        TOKEN_DELAY_MS: '5',
        PORT: '0',
      },
      streamingDir,
    ));
    await until(
      'the streaming agent listening',
      async () => a.stderr(),
      (text) => text.includes('listening on') || a.child.exitCode !== null,
    );
    dispatcher = await startDispatcher(svc.store, { backoffBaseMs: 20, backoffMaxMs: 200, pollMs: 100, requestTimeoutMs: 5000 });
    const task = await createTask(svc);
    const watching = spawnAgentctl(['tasks', 'watch', task.id], {
      env: { AGENTCTL_CONFIG_DIR: path.join(dataRoot, 'cli'), AGENTCTL_BASE_URL: svc.url, AGENTCTL_API_KEY: svc.adminKey },
    });
    const event = await svc.client().createEvent({ params: { task_id: task.id }, body: { content: 'how long is this' } });
    await until(
      'the answer finished',
      () => adk.messages.list(task.id),
      (l) => l.messages.length === 4 && l.messages[3]!.streaming_status === 'DONE',
    );
    await svc.client().updateTask({ params: { task_id: task.id }, body: { status: 'COMPLETED' } });
    const watched = await watching;
    expect(watched.exitCode, String(watched.stderr)).toBe(0);
    const callId = `call_${event.sequence_id}`;
    expect(watched.stdout).toBe(
      [
        '(thinking) The user asked something; counting its words first.',
        `→ count_words({"question":"how long is this"}) [${callId}]`,
        `← ${callId} {"words":4}`,
        'You asked: "how long is this". That is 4 words long.',
        '',
      ].join('\n'),
    );
  });

  test('every module, called in-process with a key', async () => {
    const v1 = await deploy(svc);
    const agents = await adk.agents.list();
    expect(agents.agents.map((a) => a.name)).toEqual(['support-bot']);
    expect((await adk.agents.get(v1.agent_id)).id).toBe(v1.agent_id);
    expect((await adk.agents.get('default/support-bot')).id).toBe(v1.agent_id);
    await expect(adk.agents.get('default/nobody')).rejects.toBeInstanceOf(NotFoundError);

    const task = await adk.acp.createTask('default/support-bot', { topic: 'modules' }, { name: 'modules-task' });
    expect(task.params).toEqual({ topic: 'modules' });
    expect((await adk.tasks.get(task.id)).id).toBe(task.id);
    expect((await adk.tasks.get('modules-task')).id).toBe(task.id);

    const event = await adk.acp.sendEvent(task.id, 'first');
    expect(event.content).toEqual({ type: 'text', text: 'first' });
    expect((await adk.events.get(event.id)).id).toBe(event.id);
    expect((await adk.events.list(task.id)).events.map((e) => e.id)).toEqual([event.id]);

    const sent = await adk.messages.send(task.id, { type: 'data', data: { table: [1, 2] } });
    expect((await adk.messages.list(task.id)).messages.map((m) => m.id)).toEqual([sent.id]);

    expect(await adk.state.get(task.id, v1.agent_id)).toBeNull();
    await expect(adk.state.update(task.id, v1.agent_id, { a: 1 })).rejects.toBeInstanceOf(NotFoundError);
    await adk.state.create(task.id, v1.agent_id, { a: 1, b: 2 });
    await expect(adk.state.create(task.id, v1.agent_id, { a: 1 })).rejects.toBeInstanceOf(ConflictError);
    expect((await adk.state.update(task.id, v1.agent_id, { b: null, c: 3 })).state).toEqual({ a: 1, c: 3 });
    await adk.state.delete(task.id, v1.agent_id);
    expect(await adk.state.get(task.id, v1.agent_id)).toBeNull();

    const tracker = await adk.agentTaskTracker.update(task.id, 75, 'three quarters');
    expect(tracker).toMatchObject({ task_id: task.id, agent_id: v1.agent_id, progress: 75, status_message: 'three quarters' });
    expect((await adk.agentTaskTracker.get(task.id)).progress).toBe(75);
    expect((await adk.agentTaskTracker.list({ taskId: task.id })).trackers).toHaveLength(1);
    await expect(adk.agentTaskTracker.update(task.id, 101)).rejects.toBeInstanceOf(ValidationError);

    const local = path.join(dataRoot, 'up');
    mkdirSync(local);
    writeFileSync(path.join(local, 'notes.md'), '# notes\n');
    expect(await adk.filesystem.syncUp(task.filesystem_id, local)).toMatchObject({ files_changed: 1, added: 1 });
    const copy = path.join(dataRoot, 'down');
    expect(await adk.filesystem.syncDown(task.filesystem_id, copy)).toMatchObject({ files_changed: 1, added: 1 });
    expect(readFileSync(path.join(copy, 'notes.md'), 'utf8')).toBe('# notes\n');
    // The archive gone from the blob store: a NotFoundError that says so, not a ServerError.
    const stored = await svc.store.db
      .selectFrom('filesystems')
      .select(['blob_key', 'archive_checksum'])
      .where('id', '=', task.filesystem_id)
      .executeTakeFirstOrThrow();
    await svc.service.blobs.delete(stored.blob_key!);
    const lost = await adk.filesystem.syncDown(task.filesystem_id, path.join(dataRoot, 'lost')).catch((error: unknown) => error);
    expect(lost).toBeInstanceOf(NotFoundError);
    expect(lost).toMatchObject({
      status: 404,
      code: 'archive_missing',
      message: `The archive of filesystem ${task.filesystem_id} (checksum ${stored.archive_checksum}) is gone from the blob store, so its content cannot be read; push the content again with If-Match: * to replace it`,
    });
    expect(await adk.filesystem.syncUp(task.filesystem_id, local, { force: true })).toMatchObject({ checksum: stored.archive_checksum });

    const alpha = path.join(dataRoot, 'alpha');
    mkdirSync(alpha);
    writeFileSync(path.join(alpha, 'config.json'), '{}\n');
    expect(await adk.task.syncUpSystemFolder(task.id, 'dot_alpha', alpha)).toMatchObject({ files_changed: 1 });
    const alphaCopy = path.join(dataRoot, 'alpha-copy');
    expect(await adk.task.syncDownSystemFolder(task.id, 'dot_alpha', alphaCopy)).toMatchObject({ files_changed: 1 });
    expect(readFileSync(path.join(alphaCopy, 'config.json'), 'utf8')).toBe('{}\n');

    expect((await adk.acp.cancelTask(task.id)).status).toBe('CANCELED');
    await expect(adk.acp.sendEvent(task.id, 'too late')).rejects.toBeInstanceOf(ConflictError);
    expect((await adk.tasks.delete(task.id)).id).toBe(task.id);
    expect((await adk.tasks.get(task.id)).status).toBe('DELETED');
  });
});
