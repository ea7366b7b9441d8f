import { beforeEach, describe, expect, test } from 'vitest';
import type { Scope } from '../../src/contract/resources.js';
import { engines, useService } from '../support/service.js';
import { createTask, deployActive } from '../support/fixtures.js';

/** Holes found auditing the resource endpoints, kept closed. */

describe.each(engines)('access audit (%s)', (engine) => {
  const svc = useService(engine);
  let mine: { agent_id: string };
  let theirs: { agent_id: string };

  beforeEach(async () => {
    mine = await deployActive(svc, { agent: 'mine' });
    theirs = await deployActive(svc, { agent: 'theirs' });
  });

  const keyWith = async (scopes: Scope[]) => (await svc.client().createKey({ body: { name: 'audit', scopes } })).secret;

  test('a task cannot be started on the private filesystem of a task of an agent the key may not run', async () => {
    const theirTask = await createTask(svc, { agent_name: 'default/theirs' });
    const myTask = await createTask(svc, { agent_name: 'default/mine' });
    const runner = await keyWith([{ resource_type: 'agent', resource_id: mine.agent_id, role: 'viewer' }]);
    const onTheirs = await svc.api('POST', '/tasks', { key: runner, body: { agent_id: mine.agent_id, filesystem_id: theirTask.filesystem_id } });
    expect([onTheirs.status, onTheirs.body]).toEqual([404, { detail: `Filesystem ${theirTask.filesystem_id} was not found`, code: 'not_found' }]);
    // Able to see the other agent but not to run it: 403.
    const looker = await keyWith([
      { resource_type: 'agent', resource_id: mine.agent_id, role: 'viewer' },
      { resource_type: 'agent', resource_id: theirs.agent_id, role: 'discoverer' },
    ]);
    const seen = await svc.api('POST', '/tasks', { key: looker, body: { agent_id: mine.agent_id, filesystem_id: theirTask.filesystem_id } });
    expect([seen.status, seen.body.code]).toEqual([403, 'forbidden']);
    // Its own agent's task filesystem is fine.
    const reuse = await svc.api('POST', '/tasks', { key: runner, body: { agent_id: mine.agent_id, filesystem_id: myTask.filesystem_id } });
    expect(reuse.status).toBe(201);
    expect(reuse.body.filesystem_id).toBe(myTask.filesystem_id);
  });

  test('GET /tasks/name/{name} of a task the key may not see is the unknown-name 404, without the task’s id', async () => {
    await createTask(svc, { agent_name: 'default/theirs', name: 'nightly-report' });
    const runner = await keyWith([{ resource_type: 'agent', resource_id: mine.agent_id, role: 'viewer' }]);
    const res = await svc.api('GET', '/tasks/name/nightly-report', { key: runner });
    expect([res.status, res.body]).toEqual([404, { detail: 'Task named nightly-report was not found', code: 'not_found' }]);
    const unknown = await svc.api('GET', '/tasks/name/no-such-task', { key: runner });
    expect([unknown.status, unknown.body]).toEqual([404, { detail: 'Task named no-such-task was not found', code: 'not_found' }]);
  });
});
