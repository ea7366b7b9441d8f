import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterEach, beforeAll, beforeEach, describe, expect, test } from 'vitest';
import { startDispatcher, type Dispatcher } from '../../src/server/delivery/dispatcher.js';
import { startRehearsalDriver, type RehearsalDriver } from '../../src/server/delivery/rehearsal-driver.js';
import { sweepBlobs } from '../../src/server/domain/filesystems.js';
import { issueRegistrationToken, signingSecretFor } from '../../src/server/domain/registration.js';
import type { Rehearsal, RehearsalTask } from '../../src/contract/rehearsals.js';
import type { Rollout } from '../../src/contract/rollouts.js';
import { advanceRollouts } from '../../src/server/domain/rollouts.js';
import { syncDown } from '../../src/sync/index.js';
import { buildAdkBundle, repoRoot, startAgentProcess, type AgentProcess } from '../support/agent-process.js';
import { createTask, deploy } from '../support/fixtures.js';
import { engines, useService } from '../support/service.js';

// Rehearsals and the state upgrade against the real service: the ledger fixture agent (one file,
// its behaviour per version picked by LEDGER_FLAVOR) as real ADK processes, fed by the real
// dispatcher, and the rehearsal driver replaying recorded events into shadow tasks.

const ledgerDir = path.join(repoRoot, 'test/fixtures/agents/ledger');

async function until<T>(what: string, read: () => Promise<T>, done: (value: T) => boolean, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (done(value)) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not reached in ${timeoutMs} ms; last: ${JSON.stringify(value).slice(0, 4000)}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe.each(engines)('rehearsals and onMigrate (%s)', (engine) => {
  const svc = useService(engine);
  let dispatcher: Dispatcher | undefined;
  let driver: RehearsalDriver | undefined;
  let agents: AgentProcess[] = [];
  let dataRoot: string;

  beforeAll(() => {
    buildAdkBundle();
    const link = path.join(ledgerDir, 'node_modules', 'agentctl');
    if (!existsSync(link)) {
      mkdirSync(path.dirname(link), { recursive: true });
      symlinkSync(repoRoot, link, 'dir');
    }
  });
  beforeEach(async () => {
    dataRoot = mkdtempSync(path.join(tmpdir(), 'rehearsal-it-'));
    dispatcher = await startDispatcher(svc.store, { backoffBaseMs: 20, backoffMaxMs: 200, pollMs: 100, requestTimeoutMs: 5000 });
    driver = await startRehearsalDriver(svc.store, { pollMs: 50 });
  });
  afterEach(async () => {
    await driver?.close();
    await dispatcher?.close();
    for (const agent of agents) agent.stop();
    await Promise.all(agents.map((a) => a.exited));
    agents = [];
    rmSync(dataRoot, { recursive: true, force: true });
  });

  /** A version of the ledger agent, deployed sticky (tasks stay where they are) and running as a real process. */
  async function ledger(flavor: string): Promise<{ version_id: string; branch_id: string; agent_id: string }> {
    const deployed = await deploy(svc, { agent: 'ledger', are_tasks_sticky: true });
    const agent = startAgentProcess(
      'src/index.ts',
      {
        AGENTCTL_BASE_URL: svc.url,
        AGENTCTL_VERSION_ID: deployed.version_id,
        AGENTCTL_BRANCH_ID: deployed.branch_id,
        AGENTCTL_REGISTRATION_TOKEN: await issueRegistrationToken(svc.store.db, deployed.version_id),
        AGENTCTL_SIGNING_SECRET: await signingSecretFor(svc.store.db, deployed.version_id),
        AGENTCTL_DATA_ROOT: path.join(dataRoot, flavor),
        PORT: '0',
        LEDGER_FLAVOR: flavor,
      },
      ledgerDir,
    );
    agents.push(agent);
    await until(
      `the ${flavor} ledger listening`,
      async () => agent.stderr(),
      (text) => text.includes('listening on') || agent.child.exitCode !== null,
    );
    expect(agent.stderr()).toContain('listening on');
    return deployed;
  }

  const agentTexts = async (taskId: string) =>
    (await svc.client().listMessages({ query: { task_id: taskId } })).messages.filter((m) => m.author === 'agent').map((m) => m.content);

  /** Whether the task's last delivery has finished: its handler's files are synced up by then. */
  const settled = async (taskId: string) =>
    (
      await sql<{ n: number }>`SELECT count(*)::int AS n FROM deliveries WHERE task_id = ${taskId} AND status IN ('pending', 'in_flight', 'leased')`.execute(
        svc.store.db,
      )
    ).rows[0].n === 0;

  /** A task on the ledger with these events, each answered (and its files synced up) before the next is sent. */
  async function liveTask(events: (string | { kind: string; amount: number })[]): Promise<string> {
    const task = await createTask(svc, { agent_name: 'default/ledger' });
    await until(
      'ledger ready',
      () => agentTexts(task.id),
      (m) => m.length === 1,
    );
    for (const [i, event] of events.entries()) {
      const content = typeof event === 'string' ? event : { type: 'data' as const, data: event };
      await svc.client().createEvent({ params: { task_id: task.id }, body: { content } });
      await until(
        `the answer to event ${i + 1}`,
        () => agentTexts(task.id),
        (m) => m.length === i + 2,
      );
      await until(
        `event ${i + 1} finished`,
        () => settled(task.id),
        (done) => done,
      );
    }
    return task.id;
  }

  async function completed(id: string): Promise<Rehearsal> {
    return until(
      'the rehearsal completed',
      async () => (await svc.api<Rehearsal>('GET', `/rehearsals/${id}`)).body,
      (r) => r.status === 'completed',
    );
  }

  test('a v2 that breaks on refunds is caught: the report names the event, its handler error and the missing answer; shadows stay apart', async () => {
    const v1 = await ledger('v1');
    const taskId = await liveTask(['add apple', 'add pear', { kind: 'refund', amount: 5 }, 'add apple']);
    const v2 = await ledger('v2-broken');

    const created = await svc.api<Rehearsal>('POST', '/rehearsals', { body: { from_version_id: v1.version_id, to_version_id: v2.version_id } });
    expect(created.status).toBe(201);
    expect(created.body).toMatchObject({ status: 'running', from_version_id: v1.version_id, to_version_id: v2.version_id });
    const report = await completed(created.body.id);

    expect(report.regressions_found).toBe(true);
    expect(report.totals).toMatchObject({
      tasks: 1,
      tasks_done: 1,
      events_planned: 4,
      events_replayed: 4,
      handler_errors: 1,
      timeouts: 0,
      tasks_with_regressions: 1,
    });
    const [task] = report.tasks;
    expect(task.task_id).toBe(taskId);
    expect(task.regressions).toEqual([
      {
        kind: 'handler_error',
        position: 3,
        event_id: task.events[3].event_id,
        detail: `event 3 (${task.events[3].event_id}, "{"amount":5,"kind":"refund"}"): onEvent threw: refunds are not supported`,
      },
    ]);
    // Creation and the other events answer alike; the refund's answer is missing on v2.
    expect(task.events.map((e) => [e.position, e.summary, e.differences.length])).toEqual([
      [0, 'task created (onCreate)', 0],
      [1, 'add apple', 0],
      [2, 'add pear', 0],
      [3, '{"amount":5,"kind":"refund"}', 1],
      [4, 'add apple', 0],
    ]);
    expect(task.events[3].differences).toEqual([{ index: 0, original: { type: 'text', text: 'refunded 5' }, rehearsal: null, text_diff: null }]);
    expect(task.events[3].rehearsal).toMatchObject({ handler_error: 'onEvent threw: refunds are not supported', timed_out: false });
    expect(task.events.every((e) => typeof e.original.latency_ms === 'number' && typeof e.rehearsal.latency_ms === 'number')).toBe(true);
    // v2 keeps counts where v1 kept a list: the final states differ by path.
    expect(task.state_diff).toEqual([
      { path: '$.items', original: ['apple', 'pear', 'apple'], rehearsal: { apple: 2, pear: 1 } },
      { path: '$.schema', original: 1, rehearsal: 2 },
    ]);

    // The shadow is a task of its own: hidden from lists unless asked, its messages and state its
    // own, told it was rehearsing; the original is untouched.
    const shadowId = task.shadow_task_id!;
    const listed = await svc.client().listTasks({ query: { agent_name: 'default/ledger' } });
    expect(listed.tasks.map((t) => t.id)).toEqual([taskId]);
    const withShadows = await svc.api('GET', '/tasks?agent_name=default/ledger&include_shadows=true');
    expect(withShadows.body.tasks.map((t: { id: string; shadow_of?: string }) => [t.id, t.shadow_of ?? null]).sort()).toEqual(
      [
        [taskId, null],
        [shadowId, taskId],
      ].sort(),
    );
    const shadow = await svc.client().getTask({ params: { task_id: shadowId } });
    expect(shadow).toMatchObject({ shadow_of: taskId, status: 'COMPLETED', current_version_id: v2.version_id });
    expect(shadow.filesystem_id).not.toBe((await svc.client().getTask({ params: { task_id: taskId } })).filesystem_id);
    expect((await agentTexts(taskId)).map((c) => (c.type === 'text' ? c.text : 'data'))).toEqual([
      'ledger ready',
      'added apple (1 items)',
      'added pear (2 items)',
      'refunded 5',
      'added apple (3 items)',
    ]);
    const trackers = await svc.client().listTrackers({ query: { task_id: shadowId } });
    expect(trackers.trackers[0].status_message).toBe('rehearsal');
    expect((await svc.client().listTrackers({ query: { task_id: taskId } })).trackers[0].status_message).toBe('live');
  });

  test('a good v2 replays cleanly; --max-events bounds a long task and says so; a target without onEvent replays nothing and says why', async () => {
    const v1 = await ledger('v1');
    const taskId = await liveTask(['add apple', 'add pear', 'add fig']);
    const v2 = await ledger('v2');
    const bounded = await svc.api<Rehearsal>('POST', '/rehearsals', { body: { task_ids: [taskId], to_version_id: v2.version_id, max_events: 2 } });
    expect(bounded.status).toBe(201);
    const report = await completed(bounded.body.id);
    expect(report.regressions_found).toBe(false);
    expect(report.tasks[0]).toMatchObject({
      events_total: 3,
      events_planned: 2,
      events_replayed: 2,
      truncated: 'The task has 3 events; the first 2 were replayed (max_events 2).',
      regressions: [],
    });
    expect(report.tasks[0].events.flatMap((e) => e.differences)).toEqual([]);

    const mute = await ledger('no-events');
    const skipped = await completed(
      (await svc.api<Rehearsal>('POST', '/rehearsals', { body: { from_version_id: v1.version_id, to_version_id: mute.version_id } })).body.id,
    );
    expect(skipped.totals).toMatchObject({ tasks: 1, skipped_tasks: 1, events_replayed: 0 });
    expect(skipped.tasks[0].skipped).toMatch(
      /^v3 \(ver_\w+\) has no onEvent handler \(its agent registered onCreate, onMigrate\): there is nothing to replay the events to$/,
    );
    expect(skipped.tasks[0].shadow_task_id).toBeNull();
  });

  test('a task with 10,000 events is replayed up to max_events, and the report says so', async () => {
    await ledger('v1');
    const taskId = await liveTask(['add apple']);
    // 9,999 more recorded events (written as the table holds them: sending each through the API would take minutes).
    await sql`
      INSERT INTO events (id, task_id, agent_id, sequence_id, content)
      SELECT 'evt_bulk_' || lpad(i::text, 5, '0'), t.id, t.agent_id, 100000 + i, jsonb_build_object('type', 'text', 'text', 'add item' || i)
      FROM tasks t, generate_series(1, 9999) i WHERE t.id = ${taskId}`.execute(svc.store.db);
    const v2 = await ledger('v2');
    const started = await svc.api<Rehearsal>('POST', '/rehearsals', { body: { task_ids: [taskId], to_version_id: v2.version_id, max_events: 3 } });
    expect(started.status).toBe(201);
    const report = await completed(started.body.id);
    expect(report.totals).toMatchObject({ tasks: 1, events_planned: 3, events_replayed: 3, truncated_tasks: 1, handler_errors: 0 });
    expect(report.tasks[0]).toMatchObject({
      events_total: 10_000,
      events_planned: 3,
      events_replayed: 3,
      truncated: 'The task has 10000 events; the first 3 were replayed (max_events 3).',
    });
  });

  test('a rehearsal from sequence S starts from the state the task had before S, not its state now', async () => {
    await ledger('v1');
    const taskId = await liveTask(['add apple', 'add pear', 'add fig', 'add kiwi']);
    const events = await svc.client().listEvents({ query: { task_id: taskId } });
    const fig = events.events.find((e) => e.content.type === 'text' && e.content.text === 'add fig')!;
    const v2 = await ledger('v2');

    const started = await svc.api<Rehearsal>('POST', '/rehearsals', {
      body: { task_ids: [taskId], to_version_id: v2.version_id, from_sequence: fig.sequence_id },
    });
    expect(started.status).toBe(201);
    const report = await completed(started.body.id);
    const [task] = report.tasks;
    expect(task).toMatchObject({
      start: expect.stringMatching(
        new RegExp(
          `^from sequence ${fig.sequence_id}: the task’s state as it was before sequence ${fig.sequence_id} \\(its last write before it; none if it had none yet\\), `,
        ),
      ),
      events_planned: 2,
      events_replayed: 2,
      regressions: [],
    });
    // The count goes on from the two items the task had before fig: v2 answers as v1 did.
    expect((await agentTexts(task.shadow_task_id!)).map((c) => (c.type === 'text' ? c.text : 'data'))).toEqual(['added fig (3 items)', 'added kiwi (4 items)']);
    const shadowState = await svc.client().listStates({ query: { task_id: task.shadow_task_id! } });
    expect(shadowState.states.map((s) => s.state)).toEqual([{ schema: 1, items: ['apple', 'pear', 'fig', 'kiwi'] }]);
    expect(task.state_diff).toEqual([]);
    expect(task.events.flatMap((e) => e.differences)).toEqual([]);
  });

  test('a rehearsal from a sequence before the task wrote any state starts from no state', async () => {
    await ledger('v1');
    const taskId = await liveTask(['add apple', 'add pear']);
    const v2 = await ledger('v2');
    // Sequence 1 is the task's creation, before onCreate wrote the empty ledger.
    const report = await completed(
      (await svc.api<Rehearsal>('POST', '/rehearsals', { body: { task_ids: [taskId], to_version_id: v2.version_id, from_sequence: 1 } })).body.id,
    );
    const [task] = report.tasks;
    expect(task).toMatchObject({
      start:
        'from sequence 1: the task’s state as it was before sequence 1 (its last write before it; none if it had none yet), no files (it had none before sequence 1)',
      events_planned: 2,
      events_replayed: 2,
    });
    // No state to start from: v2 starts its own ledger (schema 2) and counts from nothing.
    const shadowState = await svc.client().listStates({ query: { task_id: task.shadow_task_id! } });
    expect(shadowState.states.map((s) => s.state)).toEqual([{ schema: 2, items: { apple: 1, pear: 1 } }]);
    expect((await agentTexts(task.shadow_task_id!)).map((c) => (c.type === 'text' ? c.text : 'data'))).toEqual([
      'added apple (1 items)',
      'added pear (2 items)',
    ]);
  });

  /** The ledger.txt a task's files hold now (null: none), read through the sync library. */
  async function ledgerFile(taskId: string): Promise<string | null> {
    const task = await svc.client().getTask({ params: { task_id: taskId } });
    const dir = mkdtempSync(path.join(dataRoot, 'files-'));
    await syncDown({ baseUrl: svc.url, apiKey: svc.adminKey }, task.filesystem_id, dir);
    return existsSync(path.join(dir, 'ledger.txt')) ? readFileSync(path.join(dir, 'ledger.txt'), 'utf8') : null;
  }

  test('a rehearsal from sequence S starts from the files the task had before S, not its files now; the sweep keeps the earlier archives', async () => {
    await ledger('v1');
    // v1 writes its items to ledger.txt after each one (the ADK syncs them up); v2 writes no files.
    const taskId = await liveTask(['add apple', 'add pear', 'add fig', 'add kiwi']);
    const events = (await svc.client().listEvents({ query: { task_id: taskId } })).events;
    const sequenceOf = (text: string) => events.find((e) => e.content.type === 'text' && e.content.text === text)!.sequence_id;
    const v2 = await ledger('v2');
    const rehearse = async (fromSequence: number): Promise<RehearsalTask> => {
      const started = await svc.api<Rehearsal>('POST', '/rehearsals', {
        body: { task_ids: [taskId], to_version_id: v2.version_id, from_sequence: fromSequence },
      });
      expect(started.status).toBe(201);
      return (await completed(started.body.id)).tasks[0];
    };
    expect(await ledgerFile(taskId)).toBe('apple\npear\nfig\nkiwi\n');

    const fig = sequenceOf('add fig');
    const fromFig = await rehearse(fig);
    expect(await ledgerFile(fromFig.shadow_task_id!)).toBe('apple\npear\n');
    const shadowFiles = await svc
      .client()
      .getFilesystem({ params: { filesystem_id: (await svc.client().getTask({ params: { task_id: fromFig.shadow_task_id! } })).filesystem_id } });
    expect(shadowFiles.files_count).toBe(1);
    expect(fromFig.start).toBe(
      `from sequence ${fig}: the task’s state as it was before sequence ${fig} (its last write before it; none if it had none yet), a copy of its files as they were before sequence ${fig} (1 file, archive ${shadowFiles.archive_checksum})`,
    );

    // The archive the task had before pear is named by no filesystem now, only by the task's
    // history: a sweep with no grace period keeps it, and a rehearsal from pear starts from it.
    await sweepBlobs(svc.store.db, svc.service.blobs, -1000);
    const fromPear = await rehearse(sequenceOf('add pear'));
    expect(await ledgerFile(fromPear.shadow_task_id!)).toBe('apple\n');
    expect(fromPear.start).toMatch(new RegExp(`a copy of its files as they were before sequence ${sequenceOf('add pear')} \\(1 file, archive [^)]+\\)$`));
    expect(await ledgerFile(taskId)).toBe('apple\npear\nfig\nkiwi\n');
  });

  test('onMigrate upgrades the state v1 -> v2 before the next event, and a rollback runs it back', async () => {
    const v1 = await ledger('v1');
    const taskId = await liveTask(['add apple', 'add apple', 'add pear']);
    const before = (await svc.client().listStates({ query: { task_id: taskId } })).states[0];
    expect(before).toMatchObject({ state: { schema: 1, items: ['apple', 'apple', 'pear'] }, written_by_version_id: v1.version_id });
    const v2 = await ledger('v2');

    await svc.client().migrateTasks({ body: { from_version_id: v1.version_id, to_version_id: v2.version_id } });
    // The next event is answered by v2 on the upgraded state (the hook ran first).
    await svc.client().createEvent({ params: { task_id: taskId }, body: { content: 'add fig' } });
    await until(
      'v2 answers',
      () => agentTexts(taskId),
      (m) => m.length === 5,
    );
    expect((await agentTexts(taskId)).at(-1)).toEqual({ type: 'text', text: 'added fig (4 items)' });
    const upgraded = (await svc.client().listStates({ query: { task_id: taskId } })).states[0];
    expect(upgraded).toMatchObject({ state: { schema: 2, items: { apple: 2, pear: 1, fig: 1 } }, written_by_version_id: v2.version_id });

    // Rollback of the branch: v2 -> v1, the same hook on v1, from the newer to the older.
    const rolled = await svc.api('POST', `/branches/${v2.branch_id}/rollback`, { body: { target_version_id: v1.version_id } });
    expect(rolled.status).toBe(200);
    const downgraded = await until(
      'the state back in v1 shape',
      async () => (await svc.client().listStates({ query: { task_id: taskId } })).states[0],
      (s) => (s.state as { schema: number }).schema === 1,
    );
    expect(downgraded).toMatchObject({ state: { schema: 1, items: ['apple', 'apple', 'fig', 'pear'] }, written_by_version_id: v1.version_id });
    await until(
      'the tracker after the downgrade',
      async () => (await svc.client().listTrackers({ query: { task_id: taskId } })).trackers[0].status_message,
      (message) => message === 'migrated v2 -> v1',
    );
  });

  test('an onMigrate that throws sends the task back to its source version with the error on the task', async () => {
    const v1 = await ledger('v1');
    const taskId = await liveTask(['add apple']);
    const v2 = await ledger('v2-badmigrate');
    await svc.client().migrateTasks({ body: { task_ids: [taskId], to_version_id: v2.version_id } });
    const back = await until(
      'the task back on v1',
      () => svc.client().getTask({ params: { task_id: taskId } }),
      (t) => t.current_version_id === v1.version_id,
    );
    expect(back.migration_error).toMatchObject({ message: 'cannot read the state of v1', from_version_id: v1.version_id, to_version_id: v2.version_id });
    // v1 still answers, on the state it had.
    await svc.client().createEvent({ params: { task_id: taskId }, body: { content: 'add pear' } });
    await until(
      'v1 answers',
      () => agentTexts(taskId),
      (m) => m.some((c) => c.type === 'text' && c.text === 'added pear (2 items)'),
    );
  });

  test('a migration that succeeds clears the error an earlier failed onMigrate left on the task', async () => {
    const v1 = await ledger('v1');
    const taskId = await liveTask(['add apple']);
    const bad = await ledger('v2-badmigrate');
    await svc.client().migrateTasks({ body: { task_ids: [taskId], to_version_id: bad.version_id } });
    await until(
      'the task back on v1 with the error',
      () => svc.client().getTask({ params: { task_id: taskId } }),
      (t) => t.current_version_id === v1.version_id && t.migration_error !== undefined,
    );
    const good = await ledger('v2');
    await svc.client().migrateTasks({ body: { from_version_id: v1.version_id, to_version_id: good.version_id } });
    const moved = await svc.client().getTask({ params: { task_id: taskId } });
    expect(moved.current_version_id).toBe(good.version_id);
    expect(moved.migration_error).toBeUndefined();
    // Its onMigrate ran (the state in v2 shape) and the task stayed.
    const upgraded = await until(
      'the state in v2 shape',
      async () => (await svc.client().listStates({ query: { task_id: taskId } })).states[0],
      (s) => (s.state as { schema: number }).schema === 2,
    );
    expect(upgraded).toMatchObject({ state: { schema: 2, items: { apple: 1 } }, written_by_version_id: good.version_id });
  });

  test('an onMigrate that throws during a rollout step is in the rollout report with the task and its error, and the rollout reverts', async () => {
    const v1 = await ledger('v1');
    const taskId = await liveTask(['add apple']);
    const v2 = await ledger('v2-badmigrate');
    const created = await svc.api<Rollout>('POST', '/rollouts', { body: { from_version_id: v1.version_id, to_latest: true, steps: [100], watch: '5m' } });
    expect(created.status).toBe(201);
    await advanceRollouts(svc.store.db);
    expect((await svc.api<Rollout>('GET', `/rollouts/${created.body.id}`)).body.report[0]).toMatchObject({ moved: 1, decision: 'watching' });
    await until(
      'the task back on v1',
      () => svc.client().getTask({ params: { task_id: taskId } }),
      (t) => t.current_version_id === v1.version_id,
    );
    // Watched live: the failed hook is counted on the target, not as a handler error of the source the task went back to.
    const watched = (await svc.api<Rollout>('GET', `/rollouts/${created.body.id}`)).body.report[0];
    expect(watched.target).toMatchObject({ version_id: v2.version_id, migration_errors: 1, handler_errors: 0 });
    expect(watched.target!.migration_failures).toEqual([{ task_id: taskId, message: 'cannot read the state of v1', at: expect.any(String) }]);
    expect(watched.source).toMatchObject({ migration_errors: 0, handler_errors: 0, migration_failures: [] });

    await advanceRollouts(svc.store.db);
    const reverted = (await svc.api<Rollout>('GET', `/rollouts/${created.body.id}`)).body;
    expect(reverted.status).toBe('REVERTED');
    expect(reverted.reason).toBe(
      `step 1 (100%): the moved tasks' error rate 100% (0 handler errors and 0 failed deliveries in 1 deliveries; onMigrate failed on 1 moved task, first ${taskId}: cannot read the state of v1) exceeds the source's 0% by more than 2%; 0 tasks moved back to v1`,
    );
    expect(reverted.report[0]).toMatchObject({
      decision: 'failed',
      target: { migration_errors: 1, migration_failures: [{ task_id: taskId, message: 'cannot read the state of v1' }] },
    });
  });
});
