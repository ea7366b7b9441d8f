import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { until, useE2e } from '../support/e2e.js';
import { engines } from '../support/service.js';

const LEDGER = path.resolve('test/fixtures/agents/ledger/src/index.ts');

// Safe migration through the built binary, with the local runtime running real agent processes:
// a v2 that breaks on refunds is caught by `tasks migrate --rehearse` (the report names the event
// and the diff, exit 1), a good v2 replays cleanly (`tasks replay`), the migration's onMigrate
// upgrades the task's state to v2's shape, and a rollback runs it back to v1's.
describe.each(engines)('e2e on %s: rehearse, migrate with onMigrate, roll back', (engine) => {
  const e2e = useE2e(engine, {
    scratch: 'agentctl-e2e-rehearsal',
    project: 'ledger',
    prepare: () => writeFileSync(path.join(e2e.projectDir, 'src', 'index.ts'), readFileSync(LEDGER, 'utf8')),
  });
  const { agentctl, json } = e2e;
  const agentTexts = async (taskId: string): Promise<string[]> =>
    (await json(['tasks', 'messages', taskId])).messages
      .filter((m: any) => m.author === 'agent')
      .map((m: any) => m.content.text ?? JSON.stringify(m.content.data));
  const replied = (taskId: string, text: string) =>
    until(
      `the reply "${text}"`,
      () => agentTexts(taskId),
      (texts) => texts.includes(text),
    );
  const stateOf = async (taskId: string) => (await json(['states', 'list', '--task', taskId])).states[0];
  /** The next version: the ledger with this flavor, committed and deployed sticky (tasks stay until moved). */
  async function deployFlavor(flavor: string) {
    const file = path.join(e2e.projectDir, 'agentctl.json');
    writeFileSync(file, `${JSON.stringify({ ...JSON.parse(readFileSync(file, 'utf8')), env: { LEDGER_FLAVOR: flavor } }, null, 2)}\n`);
    await e2e.git(['commit', '-q', '-am', `ledger ${flavor}`]);
    return json(['deploy', '--sticky']);
  }

  test('rehearse catches the broken v2, a good v2 replays cleanly, onMigrate upgrades the state and rollback downgrades it', { timeout: 400_000 }, async () => {
    const v1 = await deployFlavor('v1');
    expect(v1).toMatchObject({ status: 'ACTIVE', number: 1 });
    const task = await json(['tasks', 'create', '--name', 'groceries']);
    await replied(task.id, 'ledger ready');
    expect(await agentctl(['tasks', 'send', task.id, 'add apple'])).toMatchObject({ exitCode: 0 });
    await replied(task.id, 'added apple (1 items)');
    expect(await agentctl(['tasks', 'send', task.id, '--data', '{"kind":"refund","amount":5}'])).toMatchObject({ exitCode: 0 });
    await replied(task.id, 'refunded 5');
    expect(await agentctl(['tasks', 'send', task.id, 'add pear'])).toMatchObject({ exitCode: 0 });
    await replied(task.id, 'added pear (2 items)');
    const refund = (await json(['tasks', 'events', task.id])).events.find((e: any) => e.content.type === 'data');

    // v2 throws on refunds: the rehearsal says so, names the event, shows the missing answer, exits 1.
    const broken = await deployFlavor('v2-broken');
    expect(broken).toMatchObject({ status: 'ACTIVE', number: 2 });
    const printed = await agentctl(['tasks', 'migrate', '--from', 'v1', '--to', 'v2', '--rehearse']);
    expect(printed.exitCode, printed.stderr).toBe(1);
    expect(printed.stdout).toContain(`groceries (${task.id})`);
    expect(printed.stdout).toContain(
      `Regression (handler error): event 2 (${refund.id}, "{"amount":5,"kind":"refund"}"): onEvent threw: refunds are not supported`,
    );
    expect(printed.stdout).toContain('- refunded 5');
    expect(printed.stdout).toContain('+ (no message on v2)');
    expect(printed.stdout).toContain('$.items: ["apple","pear"] -> {"apple":1,"pear":1}');
    expect(printed.stdout).toContain('Regressions found: 1 task of 1 (1 handler error, 0 timeouts). v2 is not ready for these tasks.');
    const report = await agentctl(['tasks', 'migrate', '--from', 'v1', '--to', 'v2', '--rehearse', '--max-events', '2', '--json']);
    expect(report.exitCode, report.stderr).toBe(1);
    const body = JSON.parse(report.stdout);
    expect(body).toMatchObject({
      status: 'completed',
      regressions_found: true,
      totals: { tasks: 1, events_replayed: 2, handler_errors: 1, truncated_tasks: 1 },
    });
    expect(body.tasks[0].truncated).toBe('The task has 3 events; the first 2 were replayed (max_events 2).');
    expect(body.tasks[0].regressions.map((r: any) => [r.kind, r.event_id])).toEqual([['handler_error', refund.id]]);
    expect(body.tasks[0].events[2].differences).toEqual([{ index: 0, original: { type: 'text', text: 'refunded 5' }, rehearsal: null, text_diff: null }]);
    // Nothing moved, and the original's transcript is its own.
    expect((await json(['tasks', 'get', task.id])).current_version_id).toBe(v1.id);
    expect(await agentTexts(task.id)).toEqual(['ledger ready', 'added apple (1 items)', 'refunded 5', 'added pear (2 items)']);
    expect((await json(['tasks', 'list'])).tasks.map((t: any) => t.id)).toEqual([task.id]);
    const all = await json(['tasks', 'list', '--include-shadows']);
    expect(all.tasks.filter((t: any) => t.shadow_of === task.id)).toHaveLength(2);

    // A good v2 (v3 here): no regressions, exit 0; only the state's shape differs.
    const good = await deployFlavor('v2');
    expect(good).toMatchObject({ status: 'ACTIVE', number: 3 });
    const clean = await agentctl(['tasks', 'replay', 'groceries', '--on', 'v3']);
    expect(clean.exitCode, clean.stdout + clean.stderr).toBe(0);
    expect(clean.stdout).toContain('No regressions: every replayed event ran on v3 without a handler error or timeout');

    // The migration runs v3's onMigrate before the next event: the state takes v3's shape.
    const migrated = await json(['tasks', 'migrate', '--from', 'v1', '--to', 'v3', '--yes']);
    expect(migrated.tasks.map((t: any) => t.id)).toEqual([task.id]);
    const upgraded = await until(
      'the state in v2 shape',
      () => stateOf(task.id),
      (s) => s.state.schema === 2,
    );
    expect(upgraded).toMatchObject({ state: { schema: 2, items: { apple: 1, pear: 1 } }, written_by_version_id: good.id });
    expect(await agentctl(['tasks', 'send', task.id, 'add fig'])).toMatchObject({ exitCode: 0 });
    await replied(task.id, 'added fig (3 items)');

    // Rollback to v1: v1 runs again, and its onMigrate (from v3 to v1) turns the state back.
    const rolled = await agentctl(['rollback', '--branch', 'main', '--to', 'v1', '--yes']);
    expect(rolled.exitCode, rolled.stderr).toBe(0);
    const downgraded = await until(
      'the state back in v1 shape',
      () => stateOf(task.id),
      (s) => s.state.schema === 1,
    );
    expect(downgraded).toMatchObject({ state: { schema: 1, items: ['apple', 'fig', 'pear'] }, written_by_version_id: v1.id });
    expect((await json(['tasks', 'get', task.id])).current_version_id).toBe(v1.id);
    expect(await agentctl(['tasks', 'send', task.id, 'add kiwi'])).toMatchObject({ exitCode: 0 });
    await replied(task.id, 'added kiwi (4 items)');

    // A version without onEvent: the replay runs nothing and says why, instead of a verdict.
    const mute = await deployFlavor('no-events');
    expect(mute).toMatchObject({ status: 'ACTIVE', number: 4 });
    const nothing = await agentctl(['tasks', 'replay', 'groceries', '--on', 'v4']);
    expect(nothing.exitCode, nothing.stdout + nothing.stderr).toBe(0);
    const why = `v4 (${mute.id}) has no onEvent handler (its agent registered onCreate, onMigrate): there is nothing to replay the events to`;
    expect(nothing.stdout).toContain(`Replayed nothing: ${why}`);
    expect(nothing.stdout.trim().split('\n').at(-1)).toBe(`Nothing was replayed, so nothing was checked: ${why}.`);
  });
});
