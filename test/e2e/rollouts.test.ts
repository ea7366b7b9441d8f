import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { until, useE2e } from '../support/e2e.js';
import { engines } from '../support/service.js';

// Safe migrations through the built binary with real agent processes (local runtime): a v2 whose
// handler throws on refunds is rolled out and reverts by itself at its first step, saying why; a
// fixed v3 rolls out to 100% and v1 retires; the history lists every move, and undo works until the
// tasks move on.
describe.each(engines)('e2e on %s: rollouts revert a bad version and complete a good one', (engine) => {
  const e2e = useE2e(engine, { scratch: 'agentctl-e2e-rollouts', project: 'my-bot', pollIntervalMs: 200 });
  const { agentctl, json } = e2e;
  /** The rollouts' watch windows and follow-ups take longer than the harness's default wait. */
  const WAIT_MS = 90_000;
  const versionsOf = async (ids: string[]) => Promise.all(ids.map(async (id) => (await json(['tasks', 'get', id])).current_version_id));
  const source = () => path.join(e2e.projectDir, 'src', 'index.ts');
  const commit = async (message: string, edit: (text: string) => string) => {
    writeFileSync(source(), edit(readFileSync(source(), 'utf8')));
    await e2e.git(['commit', '-q', '-am', message]);
  };
  const THROW = `if (text.startsWith('refund')) throw new Error('v2 cannot handle refunds');`;

  test('a failing v2 reverts at its first step; a good v3 rolls out to 100% and v1 retires', { timeout: 400_000 }, async () => {
    const v1 = await json(['deploy']);
    expect(v1).toMatchObject({ status: 'ACTIVE', number: 1 });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push((await json(['tasks', 'create', '--params', `{"topic":"t${i}"}`])).id);

    // v2 throws on refunds; deployed sticky, so the tasks stay on v1 (DRAINING) until they are moved.
    await commit('v2: refunds', (text) => text.replace('    const count = Number(', `    ${THROW}\n    const count = Number(`));
    const v2 = await json(['deploy', '--sticky']);
    expect(v2).toMatchObject({ status: 'ACTIVE', number: 2 });

    const bad = await json(['tasks', 'migrate', '--from', 'v1', '--to-latest', '--steps', '20,100', '--watch', '5m', '--max-error-rate', '2%', '--yes']);
    expect(bad).toMatchObject({
      status: 'RUNNING',
      from_version_id: v1.id,
      to_version_id: v2.id,
      steps: [20, 100],
      watch_ms: 300_000,
      max_error_rate_percent: 2,
    });
    // Two rollouts from one source: refused.
    const second = await agentctl(['tasks', 'migrate', '--from', 'v1', '--to-latest', '--steps', '50,100', '--yes', '--json']);
    expect(second.exitCode).toBe(5);
    expect(JSON.parse(second.stderr).error).toMatchObject({ code: 'rollout_in_progress' });

    await until(
      'the first step',
      () => json(['rollouts', 'get', bad.id]),
      (r) => r.step === 1,
      WAIT_MS,
    );
    expect((await versionsOf(ids)).filter((v) => v === v2.id)).toHaveLength(1);
    // Every task gets a refund request: the one on v2 throws (a handler error), the four on v1 answer.
    for (const id of ids) expect((await agentctl(['tasks', 'send', id, 'refund please'])).exitCode).toBe(0);

    const followed = await agentctl(['rollouts', 'get', bad.id, '--follow']);
    expect(followed.exitCode, followed.stderr).toBe(1);
    const lastLine = followed.stdout.trim().split('\n').at(-1);
    expect(lastLine).toMatch(
      /^REVERTED: step 1 \(20%\): the moved tasks' error rate 100% \(1 handler errors and \d+ failed deliveries in \d+ deliveries\) exceeds the source's 0% by more than 2%; 1 task moved back to v1$/,
    );
    const reverted = await json(['rollouts', 'get', bad.id]);
    expect(reverted.report[0]).toMatchObject({
      step: 1,
      percent: 20,
      moved: 1,
      decision: 'failed',
      target: { handler_errors: 1 },
      source: { handler_errors: 0 },
    });
    expect(new Set(await versionsOf(ids))).toEqual(new Set([v1.id]));

    // A fixed v3.
    await commit('v3: refunds fixed', (text) => text.replace(`    ${THROW}\n`, ''));
    const v3 = await json(['deploy', '--sticky']);
    expect(v3).toMatchObject({ status: 'ACTIVE', number: 3 });

    // History: a plain migration of one task, undone; undone again is refused.
    const moved = await json(['tasks', 'migrate', '--task', ids[0], '--to', 'v3', '--yes']);
    expect(moved.tasks.map((t: any) => t.id)).toEqual([ids[0]]);
    const [migration] = (await json(['migrations', 'list'])).migrations;
    expect(migration).toMatchObject({ kind: 'migrate', count: 1, from_version_ids: [v1.id], to_version_id: v3.id });
    const undo = await json(['migrations', 'undo', migration.id, '--yes']);
    expect(undo).toMatchObject({ kind: 'undo', undoes_id: migration.id, to_version_id: v1.id, count: 1 });
    expect((await json(['tasks', 'get', ids[0]])).current_version_id).toBe(v1.id);
    const again = await agentctl(['migrations', 'undo', migration.id, '--yes']);
    expect(again.exitCode).toBe(5);
    expect(again.stderr).toContain(`Migration ${migration.id} was undone already (by ${undo.id})`);

    const good = await agentctl(['tasks', 'migrate', '--from', 'v1', '--to-latest', '--steps', '20,100', '--watch', '2s', '--yes', '--follow']);
    expect(good.exitCode, good.stderr).toBe(0);
    expect(good.stdout.trim().split('\n').at(-1)).toBe('SUCCEEDED: every task moved to v3; each step stayed within 2%');
    expect(new Set(await versionsOf(ids))).toEqual(new Set([v3.id]));
    const versions = await json(['versions', 'list']);
    expect(versions.versions.map((v: any) => [v.number, v.status])).toEqual([
      [3, 'ACTIVE'],
      [2, 'RETIRED'],
      [1, 'RETIRED'],
    ]);
    // v3 answers the refund request v2 failed on.
    expect((await agentctl(['tasks', 'send', ids[0], 'refund again'])).exitCode).toBe(0);
    await until(
      'v3 answers',
      async () => (await json(['tasks', 'messages', ids[0]])).messages.map((m: any) => m.content.text),
      (texts) => texts.some((t: string) => /^echo #\d+: refund again$/.test(t)),
      WAIT_MS,
    );

    // Every move is in the history, newest first; the undo's tasks have moved on since.
    const history = (await json(['migrations', 'list'])).migrations.map((m: any) => [m.kind, m.step, m.count]);
    expect(history).toEqual([
      ['rollout_step', 2, 4],
      ['rollout_step', 1, 1],
      ['undo', null, 1],
      ['migrate', null, 1],
      ['revert', null, 1],
      ['rollout_step', 1, 1],
    ]);
    const movedOn = await agentctl(['migrations', 'undo', undo.id, '--yes']);
    expect(movedOn.exitCode).toBe(5);
    expect(movedOn.stderr).toMatch(/have moved on since, so it cannot be undone: .* is on v3 now, not v1|moved again by mig_/);
  });
});
