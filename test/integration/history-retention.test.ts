import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { sql } from 'kysely';
import { beforeAll, describe, expect, test } from 'vitest';
import { BlobNotFound } from '../../src/server/blobs/index.js';
import { sweepBlobs } from '../../src/server/domain/filesystems.js';
import { historyRetentionMs, pruneHistory } from '../../src/server/domain/history.js';
import { syncUp } from '../../src/sync/index.js';
import { createTask, deployActive } from '../support/fixtures.js';
import { engines, useService } from '../support/service.js';
import { tempDir } from '../support/trees.js';

const DAY = 86_400_000;

test('AGENTCTL_HISTORY_RETENTION is a duration, 30 days when unset', () => {
  expect(historyRetentionMs(undefined)).toBe(30 * DAY);
  expect(historyRetentionMs('12h')).toBe(12 * 3_600_000);
  expect(() => historyRetentionMs('soon')).toThrow('AGENTCTL_HISTORY_RETENTION must be a duration such as 30d, 12h or 90m, not "soon"');
});

// State and file history (kept for rehearsals from a sequence) is pruned back to the task's last
// move to another version and to the retention window, keeping exactly what a rehearsal from there on reads.
describe.each(engines)('history retention (%s)', (engine) => {
  beforeAll(async () => {
    process.env.XDG_CACHE_HOME = await tempDir('agentctl-cache-');
  });
  // The service's own blob store: a temporary directory of its own, removed when it closes.
  const svc = useService(engine);

  test('a window and a migration cut the history; what a rehearsal from the cut reads stays; older archives become collectable', async () => {
    const v1 = await deployActive(svc, { are_tasks_sticky: true });
    const task = await createTask(svc);
    const db = svc.store.db;
    const blobs = svc.service.blobs;
    const dir = await tempDir('agentctl-files-');
    const event = async (text: string) =>
      (await svc.client().createEvent({ params: { task_id: task.id }, body: { content: { type: 'text', text } } })).sequence_id;
    const writeState = async (n: number) => svc.client().mergeOrCreateState({ body: { task_id: task.id, agent_id: v1.agent_id, state: { n } } });
    const upload = async (text: string) => {
      await writeFile(path.join(dir, 'notes.txt'), text);
      return (await syncUp({ baseUrl: svc.url, apiKey: svc.adminKey }, task.filesystem_id, dir)).checksum;
    };
    const stateHistory = async () =>
      (await db.selectFrom('state_history').select('state').where('task_id', '=', task.id).orderBy('sequence_id').execute()).map((r) => r.state);
    const fileHistory = async () =>
      (await db.selectFrom('filesystem_history').select('archive_checksum').where('task_id', '=', task.id).orderBy('replaced_at_sequence').execute()).map(
        (r) => r.archive_checksum,
      );
    const firstSequence = async () =>
      (await db.selectFrom('tasks').select('history_from_sequence').where('id', '=', task.id).executeTakeFirstOrThrow()).history_from_sequence;

    const a = await upload('a');
    await writeState(1);
    await event('one');
    await writeState(2);
    const b = await upload('b');
    const two = await event('two');
    await writeState(3);
    const c = await upload('c');
    const three = await event('three');
    await writeState(4);
    await upload('d');
    expect(await stateHistory()).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
    expect(await fileHistory()).toEqual([null, a, b, c]);
    const blobOf = async (checksum: string) =>
      (await db.selectFrom('filesystem_history').select('blob_key').where('archive_checksum', '=', checksum).executeTakeFirstOrThrow()).blob_key!;
    const [blobA, blobB, blobC] = [await blobOf(a), await blobOf(b), await blobOf(c)];

    // Everything within the window: nothing to prune.
    expect(await pruneHistory(db, 30 * DAY)).toEqual({ tasks: 1, states: 0, archives: 0 });
    expect(await firstSequence()).toBe(1);
    expect(await stateHistory()).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);

    // Everything before event "three" recorded 40 days ago: the cut is at "three".
    await sql`UPDATE task_stream SET created_at = now() - interval '40 days' WHERE task_id = ${task.id} AND sequence_id < ${three}`.execute(db);
    expect(await pruneHistory(db, 30 * DAY)).toEqual({ tasks: 1, states: 2, archives: 2 });
    expect(await firstSequence()).toBe(three);
    // The state at "three" (the last write before it), the archive replaced at "three" and the files at creation stay.
    expect(await stateHistory()).toEqual([{ n: 3 }]);
    expect(await fileHistory()).toEqual([null, c]);
    expect(await pruneHistory(db, 30 * DAY)).toEqual({ tasks: 0, states: 0, archives: 0 });

    // A rehearsal from before the cut is refused, saying where it may start; from the cut it starts from the kept state.
    const v2 = await deployActive(svc, { are_tasks_sticky: true });
    const early = await svc.api('POST', '/rehearsals', { body: { task_ids: [task.id], to_version_id: v2.version_id, from_sequence: two } });
    expect(early.status).toBe(409);
    expect(early.body).toEqual({
      code: 'history_pruned',
      detail: `Task ${task.id} keeps the state and files a rehearsal starts from back to sequence ${three} (its last migration, and AGENTCTL_HISTORY_RETENTION): rehearse from sequence ${three} or later, or from its creation`,
    });
    const fromCut = await svc.api('POST', '/rehearsals', { body: { task_ids: [task.id], to_version_id: v2.version_id, from_sequence: three } });
    expect(fromCut.status, JSON.stringify(fromCut.body)).toBe(201);
    const shadowId = (await db.selectFrom('tasks').select('id').where('shadow_of', '=', task.id).executeTakeFirstOrThrow()).id;
    expect((await svc.client().listStates({ query: { task_id: shadowId } })).states.map((s) => s.state)).toEqual([{ n: 3 }]);
    expect(
      (await svc.client().getFilesystem({ params: { filesystem_id: (await svc.client().getTask({ params: { task_id: shadowId } })).filesystem_id } }))
        .archive_checksum,
    ).toBe(c);

    // The pruned archives are referenced by nothing now: the blob sweep collects them, and keeps the rest.
    await sweepBlobs(db, blobs, -1000);
    await expect(blobs.get(blobA)).rejects.toBeInstanceOf(BlobNotFound);
    await expect(blobs.get(blobB)).rejects.toBeInstanceOf(BlobNotFound);
    (await blobs.get(blobC)).destroy();

    // A migration cuts the history at the move, however recent.
    await event('four');
    await writeState(5);
    const moved = await svc.client().migrateTasks({ body: { task_ids: [task.id], to_version_id: v2.version_id } });
    expect(moved.tasks.map((t) => t.id)).toEqual([task.id]);
    // The move itself records nothing in the task's stream: the first sequence after it is the next event.
    const five = await event('five');
    await writeState(6);
    expect(await stateHistory()).toEqual([{ n: 3 }, { n: 4 }, { n: 5 }]);
    expect(await pruneHistory(db, 30 * DAY)).toEqual({ tasks: 1, states: 2, archives: 1 });
    expect(await firstSequence()).toBe(five);
    expect(await stateHistory()).toEqual([{ n: 5 }]);
    expect(await fileHistory()).toEqual([null]);

    // Every move cuts it (tasks.moved_at, as for the state history): a deploy that moves the task,
    // which the migration history does not record.
    await event('six');
    await writeState(7);
    const v3 = await deployActive(svc);
    expect((await svc.client().getTask({ params: { task_id: task.id } })).current_version_id).toBe(v3.version_id);
    expect((await svc.client().listMigrations({ query: {} })).migrations.map((m) => m.to_version_id)).toEqual([v2.version_id]);
    const seven = await event('seven');
    await writeState(8);
    expect(await stateHistory()).toEqual([{ n: 5 }, { n: 6 }, { n: 7 }]);
    expect(await pruneHistory(db, 30 * DAY)).toEqual({ tasks: 1, states: 2, archives: 0 });
    expect(await firstSequence()).toBe(seven);
    expect(await stateHistory()).toEqual([{ n: 7 }]);
  });
});
