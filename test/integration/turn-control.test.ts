import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterEach, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import type { DoubleTextingPolicy } from '../../src/contract/enums.js';
import { startDispatcher, type Dispatcher } from '../../src/server/delivery/dispatcher.js';
import { issueRegistrationToken, markReplicaGone, signingSecretFor } from '../../src/server/domain/registration.js';
import { buildAdkBundle, repoRoot, startAgentProcess, type AgentProcess } from '../support/agent-process.js';
import { createTask, deploy } from '../support/fixtures.js';
import { engines, useService } from '../support/service.js';

// Interrupt and double-texting (README "Interrupt and double-texting") against the real service,
// the real dispatcher and the streaming example as a real agent process.

const streamingDir = path.join(repoRoot, 'examples/streaming');

async function until<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not reached in ${timeoutMs} ms; last: ${JSON.stringify(value)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe.each(engines)('turn control (%s)', (engine) => {
  const svc = useService(engine);
  let dispatcher: Dispatcher | undefined;
  let agent: AgentProcess | undefined;
  let dataRoot: string;

  beforeAll(() => {
    buildAdkBundle();
    const link = path.join(streamingDir, 'node_modules', 'agentctl');
    if (!existsSync(link)) {
      mkdirSync(path.dirname(link), { recursive: true });
      symlinkSync(repoRoot, link, 'dir');
    }
  });
  beforeEach(() => {
    dataRoot = mkdtempSync(path.join(tmpdir(), 'turns-it-'));
  });
  afterEach(async () => {
    await dispatcher?.close();
    dispatcher = undefined;
    agent?.stop();
    if (agent) await agent.exited;
    agent = undefined;
    rmSync(dataRoot, { recursive: true, force: true });
  });

  /** The streaming example on a version with `policy`, fed by a dispatcher with a short interrupt grace (and lease, when given). */
  async function start(policy: DoubleTextingPolicy = 'enqueue', options: { leaseMs?: number } = {}) {
    const v1 = await deploy(svc, { double_texting: policy });
    const a = (agent = startAgentProcess(
      'src/index.ts',
      {
        AGENTCTL_BASE_URL: svc.url,
        AGENTCTL_VERSION_ID: v1.version_id,
        AGENTCTL_BRANCH_ID: v1.branch_id,
        AGENTCTL_REGISTRATION_TOKEN: await issueRegistrationToken(svc.store.db, v1.version_id),
        AGENTCTL_SIGNING_SECRET: await signingSecretFor(svc.store.db, v1.version_id),
        AGENTCTL_DATA_ROOT: dataRoot,
        TOKEN_DELAY_MS: '2',
        SLOW_TOKEN_DELAY_MS: '100',
        PORT: '0',
      },
      streamingDir,
    ));
    await until(
      'the streaming agent listening',
      async () => a.stderr(),
      (text) => text.includes('listening on') || a.child.exitCode !== null,
    );
    dispatcher = await startDispatcher(svc.store, {
      backoffBaseMs: 20,
      backoffMaxMs: 200,
      pollMs: 100,
      requestTimeoutMs: 5000,
      interruptGraceMs: 300,
      ...options,
    });
    const task = await createTask(svc);
    // task/create is a turn too: wait for it, so what follows runs against an idle agent.
    await idle(task.id);
    return { version: v1, task };
  }

  const send = (taskId: string, text: string) => svc.api('POST', `/tasks/${taskId}/events`, { body: { content: text } });
  const messages = async (taskId: string) => (await svc.client().listMessages({ query: { task_id: taskId, limit: 500 } })).messages;
  const texts = async (taskId: string) =>
    (await messages(taskId)).filter((m) => m.content.type === 'text').map((m) => [(m.content as { text: string }).text, m.streaming_status]);
  const turn = async (taskId: string) => (await svc.api('GET', `/tasks/${taskId}/turn`)).body;
  const idle = (taskId: string) =>
    until(
      'the agent idle',
      () => turn(taskId),
      (t) => t.busy === false,
    );
  /** The slow answer, once it streams (IN_PROGRESS with some text). */
  const slowAnswerStreaming = (taskId: string) =>
    until(
      'the slow answer streaming',
      () => messages(taskId),
      (list) => list.some((m) => m.content.type === 'text' && m.streaming_status === 'IN_PROGRESS' && m.content.text.includes('word')),
    );

  test('interrupt mid-stream: the answer ends INTERRUPTED with what it had, the task stays RUNNING, and the next event is answered', async () => {
    const { task } = await start();
    expect((await svc.api('POST', `/tasks/${task.id}/interrupt`)).body).toEqual({
      task_id: task.id,
      interrupted: false,
      turn_delivery_id: null,
      detail: `Nothing to interrupt: no turn of task ${task.id} is running`,
    });
    expect(await send(task.id, 'slow please')).toMatchObject({ status: 201 });
    await slowAnswerStreaming(task.id);
    const interrupted = await svc.api('POST', `/tasks/${task.id}/interrupt`);
    expect(interrupted.status).toBe(200);
    expect(interrupted.body).toMatchObject({ task_id: task.id, interrupted: true });
    const stopped = await until(
      'the answer interrupted',
      () => messages(task.id),
      (list) => list.some((m) => m.streaming_status === 'INTERRUPTED'),
    );
    const answer = stopped.find((m) => m.streaming_status === 'INTERRUPTED')!;
    expect(answer.streaming_error).toBe('The turn was interrupted');
    expect(answer.content.type === 'text' && answer.content.text).toMatch(/^Thinking slowly about "slow please": word1 /);
    expect(answer.content.type === 'text' && answer.content.text).not.toContain('word60');
    await idle(task.id);
    expect((await svc.client().getTask({ params: { task_id: task.id } })).status).toBe('RUNNING');
    // The interrupted turn was completed, not sent again.
    const rows = await sql<{ method: string; kind: string; status: string; attempts: number }>`
      SELECT method, kind, status, attempts FROM deliveries WHERE task_id = ${task.id} ORDER BY id`.execute(svc.store.db);
    expect(rows.rows).toEqual([
      { method: 'task/create', kind: 'turn', status: 'done', attempts: 1 },
      { method: 'event/send', kind: 'turn', status: 'done', attempts: 1 },
      { method: 'task/interrupt', kind: 'interrupt', status: 'done', attempts: 1 },
    ]);
    await send(task.id, 'and now');
    await until(
      'the next answer',
      () => texts(task.id),
      (t) => t.some(([text, status]) => text === 'You asked: "and now". That is 2 words long.' && status === 'DONE'),
    );
  });

  test('a handler that ignores the signal is cut off after the grace; its delivery is completed, not sent again', async () => {
    const { task } = await start();
    await send(task.id, 'stubborn one');
    await until(
      'the stubborn handler working',
      () => texts(task.id),
      (t) => t.some(([text]) => text === 'Working on it, and not listening to interrupts.'),
    );
    expect((await svc.api('POST', `/tasks/${task.id}/interrupt`)).body.interrupted).toBe(true);
    await idle(task.id);
    expect(agent!.stderr()).toContain('ignored the interrupt; cut off, its delivery completed');
    await send(task.id, 'hello there');
    await until(
      'the next answer',
      () => texts(task.id),
      (t) => t.some(([text, status]) => text === 'You asked: "hello there". That is 2 words long.' && status === 'DONE'),
    );
    const sent = await sql<{ attempts: number }>`SELECT attempts FROM deliveries WHERE task_id = ${task.id} AND method = 'event/send' ORDER BY id`.execute(
      svc.store.db,
    );
    expect(sent.rows).toEqual([{ attempts: 1 }, { attempts: 1 }]);
  });

  test('interrupt of an unknown task is 404; of a task of another org too', async () => {
    const missing = await svc.api('POST', '/tasks/task_nope/interrupt');
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ detail: 'Task task_nope was not found', code: 'not_found' });
    expect((await svc.api('GET', '/tasks/task_nope/turn')).status).toBe(404);
  });

  test('enqueue (the default): an event sent while a turn runs waits, then is answered; the running answer finishes', async () => {
    const { task } = await start('enqueue');
    await send(task.id, 'slow please');
    await slowAnswerStreaming(task.id);
    expect((await turn(task.id)).busy).toBe(true);
    expect(await send(task.id, 'next one')).toMatchObject({ status: 201 });
    expect(await turn(task.id)).toMatchObject({ busy: true, queued: 1 });
    const done = await until(
      'both answers',
      () => texts(task.id),
      (t) => t.filter(([, status]) => status === 'DONE').length === 2,
    );
    expect(done.map(([text]) => String(text).slice(0, 30))).toEqual(['Thinking slowly about "slow pl', 'You asked: "next one". That is']);
  });

  test('interrupt: an event sent while a turn runs interrupts it, then is answered', async () => {
    const { task } = await start('interrupt');
    await send(task.id, 'slow please');
    await slowAnswerStreaming(task.id);
    expect(await send(task.id, 'never mind')).toMatchObject({ status: 201 });
    const answered = await until(
      'the new event answered',
      () => texts(task.id),
      (t) => t.some(([, status]) => status === 'DONE'),
    );
    expect(answered).toEqual([
      [expect.stringMatching(/^Thinking slowly about "slow please": word1 /), 'INTERRUPTED'],
      ['You asked: "never mind". That is 2 words long.', 'DONE'],
    ]);
    expect((await svc.client().getTask({ params: { task_id: task.id } })).status).toBe('RUNNING');
  });

  test('reject: an event sent while a turn runs is refused with 409 task_busy; once idle it is taken', async () => {
    const { task } = await start('reject');
    await send(task.id, 'slow please');
    await slowAnswerStreaming(task.id);
    const refused = await send(task.id, 'hurry up');
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe('task_busy');
    expect(refused.body.detail).toMatch(
      /^Task task_\S+ is busy with a turn \(delivery \d+\) and its agent rejects events meanwhile \(double_texting: reject\)/,
    );
    // Refused means not written: no event, no delivery.
    expect((await svc.client().listEvents({ query: { task_id: task.id } })).events.map((e) => e.content)).toEqual([{ type: 'text', text: 'slow please' }]);
    await idle(task.id);
    expect(await send(task.id, 'hurry up')).toMatchObject({ status: 201 });
  });

  test('merge: events sent while a turn runs are delivered together as one turn (ctx.batch)', async () => {
    const { task } = await start('merge');
    await send(task.id, 'slow please');
    await slowAnswerStreaming(task.id);
    await send(task.id, 'first');
    await send(task.id, 'second question');
    const done = await until(
      'both turns answered',
      () => texts(task.id),
      (t) => t.filter(([, status]) => status === 'DONE').length === 2,
    );
    expect(done[1]).toEqual(['You asked 2 things at once: "first", "second question". That is 3 words long.', 'DONE']);
    const sent = await sql<{ n: number }>`SELECT count(*)::int AS n FROM deliveries WHERE task_id = ${task.id} AND method = 'event/send'`.execute(svc.store.db);
    expect(sent.rows[0].n).toBe(2);
  });

  test('an agent killed mid-stream: when its lease runs out its message ends INTERRUPTED, not stuck IN_PROGRESS', async () => {
    const { task } = await start('enqueue', { leaseMs: 1000 });
    await send(task.id, 'slow please');
    await slowAnswerStreaming(task.id);
    agent!.child.kill('SIGKILL');
    await agent!.exited;
    const ended = await until(
      'the answer interrupted',
      () => messages(task.id),
      (list) => list.some((m) => m.streaming_status === 'INTERRUPTED'),
    );
    expect(ended.filter((m) => m.streaming_status === 'IN_PROGRESS')).toEqual([]);
    expect(ended.find((m) => m.streaming_status === 'INTERRUPTED')!.streaming_error).toBe(
      'the agent stopped reporting on the turn writing it (its completion lease ran out)',
    );
  });

  test('an agent process that exits mid-stream (the runtime saw it go): its message ends INTERRUPTED', async () => {
    const { version, task } = await start();
    await send(task.id, 'slow please');
    await slowAnswerStreaming(task.id);
    agent!.child.kill('SIGKILL');
    await agent!.exited;
    const replica = await svc.store.db.selectFrom('version_replicas').select('acp_url').where('version_id', '=', version.version_id).executeTakeFirstOrThrow();
    await markReplicaGone(svc.store.db, version.version_id, replica.acp_url);
    const answer = (await messages(task.id)).find((m) => m.content.type === 'text')!;
    expect([answer.streaming_status, answer.streaming_error]).toEqual(['INTERRUPTED', 'the agent process writing it exited before finishing it']);
  });
});
