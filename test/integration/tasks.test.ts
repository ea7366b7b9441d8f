import { describe, expect, test } from 'vitest';
import { Task } from '../../src/contract/resources.js';
import { TaskList } from '../../src/contract/endpoints.js';
import { engines, useService } from '../support/service.js';
import { createTask, deploy, deployActive, register } from '../support/fixtures.js';
import { expectError, expectInvalid } from '../support/bad-input.js';

describe.each(engines)('tasks (%s)', (engine) => {
  const svc = useService(engine);

  test('a new task is RUNNING on the branch’s ACTIVE version, with a private filesystem', async () => {
    const v1 = await deployActive(svc);
    const res = await svc.api('POST', '/tasks', { body: { agent_id: v1.agent_id, name: 'nightly-report', params: { day: 'mon' } } });
    expect(res.status).toBe(201);
    const t = Task.parse(res.body);
    expect(t).toMatchObject({
      name: 'nightly-report',
      status: 'RUNNING',
      params: { day: 'mon' },
      created_version_id: v1.version_id,
      current_version_id: v1.version_id,
    });
    expect(t.filesystem_id).toMatch(/^fs_/);
    expect(t.namespace_id).toMatch(/^ns_/);
    expect(t.created_at).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  });

  test('the branch defaults to the one the production environment names', async () => {
    await deployActive(svc, { branch: 'dev' });
    const main = await deployActive(svc, { branch: 'main' });
    expect((await createTask(svc)).current_version_id).toBe(main.version_id);
  });

  test('an explicit branch routes there', async () => {
    const dev = await deployActive(svc, { branch: 'dev' });
    expect((await createTask(svc, { branch: 'dev' })).current_version_id).toBe(dev.version_id);
  });

  test('a branch with no ACTIVE or DEPLOYING version is a 409 no_routable_version', async () => {
    const v1 = await deploy(svc);
    await register(svc, v1.version_id, undefined, 'FAILED');
    const res = await svc.api('POST', '/tasks', { body: { agent_id: v1.agent_id } });
    expect(res).toMatchObject({ status: 409, body: { code: 'no_routable_version' } });
  });

  test('a task name is unique (409)', async () => {
    await deployActive(svc);
    await createTask(svc, { name: 'only-one' });
    const res = await svc.api('POST', '/tasks', { body: { agent_name: 'support-bot', name: 'only-one' } });
    expect(res).toMatchObject({ status: 409, body: { code: 'task_name_taken', detail: 'A task named only-one already exists' } });
  });

  test('an unknown agent is a 404, and neither agent_id nor agent_name is a 422', async () => {
    expect((await svc.api('POST', '/tasks', { body: { agent_id: 'agt_missing' } })).body).toEqual({
      detail: 'Agent agt_missing was not found',
      code: 'not_found',
    });
    const res = await svc.api('POST', '/tasks', { body: {} });
    expect(res.status).toBe(422);
    expect(res.body.detail[0].loc).toEqual(['body', 'agent_id']);
  });

  test('get by id and by name', async () => {
    await deployActive(svc);
    const t = await createTask(svc, { name: 'by-name' });
    expect((await svc.api('GET', `/tasks/${t.id}`)).body).toEqual(t);
    expect((await svc.api('GET', '/tasks/name/by-name')).body).toEqual(t);
    expect((await svc.api('GET', '/tasks/name/nope')).status).toBe(404);
  });

  test('list filters by agent, branch and status, newest first, without DELETED ones', async () => {
    await deployActive(svc);
    await deployActive(svc, { branch: 'dev' });
    const a = await createTask(svc);
    const b = await createTask(svc, { branch: 'dev' });
    const c = await createTask(svc);
    await svc.client().updateTask({ params: { task_id: c.id }, body: { status: 'IDLE' } });
    const gone = await createTask(svc);
    await svc.client().deleteTask({ params: { task_id: gone.id } });

    const all = TaskList.parse((await svc.api('GET', '/tasks?agent=default/support-bot')).body);
    expect(all.tasks.map((t) => t.id)).toEqual([c.id, b.id, a.id]);
    expect(all.total).toBe(3);
    expect((await svc.api('GET', '/tasks?agent=default/support-bot&branch=dev')).body.tasks.map((t: any) => t.id)).toEqual([b.id]);
    expect((await svc.api('GET', '/tasks?status=IDLE')).body.tasks.map((t: any) => t.id)).toEqual([c.id]);
    expect((await svc.api('GET', '/tasks?status=DELETED')).body.tasks.map((t: any) => t.id)).toEqual([gone.id]);
    const page2 = (await svc.api('GET', '/tasks?limit=2&page_number=2')).body;
    expect(page2).toMatchObject({ total: 3 });
    expect(page2.tasks.map((t: any) => t.id)).toEqual([a.id]);
  });

  test('list with a bad status or limit is a 422 on the query', async () => {
    const res = await svc.api('GET', '/tasks?status=SLEEPING&limit=0');
    expect(res.status).toBe(422);
    expect(res.body.detail.map((d: any) => d.loc)).toEqual([
      ['query', 'status'],
      ['query', 'limit'],
    ]);
  });

  test('task_metadata updates; RUNNING <-> IDLE', async () => {
    await deployActive(svc);
    const t = await createTask(svc);
    const res = await svc.api('PATCH', `/tasks/${t.id}`, { body: { task_metadata: { owner: 'ops' }, status: 'IDLE' } });
    expect(res.body).toMatchObject({ task_metadata: { owner: 'ops' }, status: 'IDLE' });
    expect((await svc.api('PATCH', `/tasks/${t.id}`, { body: { status: 'RUNNING' } })).body.status).toBe('RUNNING');
  });

  test('cancel ends a task; a terminal task refuses every change but DELETE (409)', async () => {
    await deployActive(svc);
    const t = await createTask(svc);
    const canceled = await svc.api('POST', `/tasks/${t.id}/cancel`);
    expect(canceled).toMatchObject({ status: 200, body: { status: 'CANCELED' } });
    expect(await svc.api('POST', `/tasks/${t.id}/cancel`)).toMatchObject({ status: 409, body: { code: 'task_terminal' } });
    expect(await svc.api('PATCH', `/tasks/${t.id}`, { body: { task_metadata: {} } })).toMatchObject({ status: 409, body: { code: 'task_terminal' } });
    expect(await svc.api('DELETE', `/tasks/${t.id}`)).toMatchObject({ status: 200, body: { status: 'DELETED' } });
  });

  test('a deleted task is gone for every change (404)', async () => {
    await deployActive(svc);
    const t = await createTask(svc);
    await svc.client().deleteTask({ params: { task_id: t.id } });
    expect((await svc.api('DELETE', `/tasks/${t.id}`)).status).toBe(404);
  });

  test('DELETED cannot be set through PATCH (422)', async () => {
    await deployActive(svc);
    const t = await createTask(svc);
    const res = await svc.api('PATCH', `/tasks/${t.id}`, { body: { status: 'DELETED' } });
    expect(res.status).toBe(422);
    expect(res.body.detail[0].loc).toEqual(['body', 'status']);
  });

  describe('the upstream API’s list parameters and relationships', () => {
    /** Three tasks of support-bot created a month apart, and one of another agent in namespace `other`. */
    async function calendar() {
      const bot = await deployActive(svc);
      await svc.client().createNamespace({ body: { name: 'Other', slug: 'other' } });
      const other = await deployActive(svc, { agent: 'other/helper' });
      const jan = await createTask(svc, { name: 'charlie' });
      const feb = await createTask(svc, { name: 'alpha' });
      const mar = await createTask(svc, { name: 'bravo' });
      const elsewhere = await createTask(svc, { agent_name: 'other/helper', name: 'delta' });
      const when: [string, string][] = [
        [jan.id, '2025-01-15T10:00:00.000Z'],
        [feb.id, '2025-02-15T10:00:00.000Z'],
        [mar.id, '2025-03-15T10:00:00.000Z'],
        [elsewhere.id, '2025-04-15T10:00:00.000Z'],
      ];
      for (const [id, at] of when) await svc.store.db.updateTable('tasks').set({ created_at: at }).where('id', '=', id).execute();
      return { bot, other, jan, feb, mar, elsewhere };
    }
    const ids = (tasks: { id: string }[]) => tasks.map((t) => t.id);

    test('agent_name filters as agent does: namespace/name, or a bare name in default', async () => {
      const { jan, feb, mar } = await calendar();
      const client = svc.client();
      expect(ids((await client.listTasks({ query: { agent_name: 'default/support-bot' } })).tasks)).toEqual([mar.id, feb.id, jan.id]);
      expect(ids((await client.listTasks({ query: { agent_name: 'support-bot', order_direction: 'asc' } })).tasks)).toEqual([jan.id, feb.id, mar.id]);
      expect((await client.listTasks({ query: { agent_name: 'default/support-bot', agent: 'default/support-bot' } })).total).toBe(3);
      expectInvalid(await svc.api('GET', '/tasks?agent_name=default/support-bot&agent=other/helper'), ['query', 'agent_name']);
      expectError(await svc.api('GET', '/tasks?agent_name=default/nobody'), 404, 'not_found', 'Agent default/nobody was not found');
    });

    test('namespace_id keeps the tasks of one namespace; an unknown one is 404', async () => {
      const { elsewhere } = await calendar();
      const client = svc.client();
      const other = (await client.listNamespaces()).namespaces.find((n) => n.slug === 'other')!;
      expect(await client.listTasks({ query: { namespace_id: other.id } })).toEqual({
        tasks: [expect.objectContaining({ id: elsewhere.id, namespace_id: other.id })],
        total: 1,
      });
      expectError(await svc.api('GET', '/tasks?namespace_id=ns_nope'), 404, 'not_found', 'Namespace ns_nope was not found');
    });

    test('created_after (inclusive) and created_before (exclusive) bound the creation time; a date means midnight UTC', async () => {
      const { jan, feb, mar, elsewhere } = await calendar();
      const client = svc.client();
      const listed = async (query: { created_after?: string; created_before?: string }) => ids((await client.listTasks({ query })).tasks);
      expect(await listed({ created_after: '2025-02-15T10:00:00.000Z' })).toEqual([elsewhere.id, mar.id, feb.id]);
      expect(await listed({ created_before: '2025-02-15T10:00:00.000Z' })).toEqual([jan.id]);
      expect(await listed({ created_after: '2025-02-01', created_before: '2025-04-01' })).toEqual([mar.id, feb.id]);
      // An offset is read as the instant it names: 11:00+01:00 is 10:00Z.
      expect(await listed({ created_after: '2025-03-15T11:00:00+01:00', created_before: '2025-03-15T10:00:00.001Z' })).toEqual([mar.id]);
    });

    test('order_by sorts by name, status or updated_at in order_direction, then by id', async () => {
      const { jan, feb, mar, elsewhere } = await calendar();
      const client = svc.client();
      expect(ids((await client.listTasks({ query: { order_by: 'name', order_direction: 'asc' } })).tasks)).toEqual([feb.id, mar.id, jan.id, elsewhere.id]);
      await client.updateTask({ params: { task_id: jan.id }, body: { status: 'IDLE' } });
      expect(ids((await client.listTasks({ query: { order_by: 'updated_at', limit: 1 } })).tasks)).toEqual([jan.id]);
      expect(ids((await client.listTasks({ query: { order_by: 'status', order_direction: 'asc', limit: 1 } })).tasks)).toEqual([jan.id]);
      expect(ids((await client.listTasks({ query: { order_by: 'created_at' } })).tasks)).toEqual([elsewhere.id, mar.id, feb.id, jan.id]);
    });

    test('include_total=false leaves total out; the default counts the whole filtered list', async () => {
      await calendar();
      const client = svc.client();
      const without = await client.request('listTasks', { query: { include_total: 'false', limit: 2 } });
      expect(Object.keys(without.raw as object)).toEqual(['tasks']);
      expect(without.data.tasks).toHaveLength(2);
      const withTotal = await client.request('listTasks', { query: { include_total: 'true', limit: 2 } });
      expect(withTotal.raw).toMatchObject({ total: 4 });
      expect((await client.listTasks({ query: { limit: 2 } })).total).toBe(4);
    });

    test('relationships=agents fills each task’s agents with its agent, on list, get and get by name; without it there is no agents field', async () => {
      const { bot, other, jan, elsewhere } = await calendar();
      const client = svc.client();
      const botAgent = await client.getAgent({ params: { agent_id: bot.agent_id } });
      const otherAgent = await client.getAgent({ params: { agent_id: other.agent_id } });
      const listed = await client.listTasks({ query: { relationships: 'agents', limit: 2 } });
      expect(listed.tasks.map((t) => [t.id, t.agents])).toEqual([
        [elsewhere.id, [otherAgent]],
        [expect.any(String), [botAgent]],
      ]);
      expect((await client.getTask({ params: { task_id: jan.id }, query: { relationships: ['agents'] } })).agents).toEqual([botAgent]);
      expect((await client.getTaskByName({ params: { task_name: 'delta' }, query: { relationships: 'agents' } })).agents).toEqual([otherAgent]);
      // Repeated, as a list parameter may be sent.
      expect((await svc.api('GET', `/tasks/${jan.id}?relationships=agents&relationships=agents`)).body.agents).toEqual([botAgent]);
      const plain = await client.request('getTask', { params: { task_id: jan.id } });
      expect(plain.raw).not.toHaveProperty('agents');
    });

    test('bad values of every new parameter are 422s at their query field', async () => {
      const bad = async (query: string) => (await svc.api('GET', query)).body.detail?.map((d: { loc: unknown }) => d.loc);
      expect(
        await bad(
          `/tasks?created_after=yesterday&created_before=2025-13-01&order_by=priority&include_total=maybe&relationships=versions&namespace_id=${'n'.repeat(65)}`,
        ),
      ).toEqual([
        ['query', 'namespace_id'],
        ['query', 'created_after'],
        ['query', 'created_before'],
        ['query', 'order_by'],
        ['query', 'include_total'],
        ['query', 'relationships'],
      ]);
      expectInvalid(await svc.api('GET', '/tasks?created_after=2025-03-01&created_before=2025-02-01'), ['query', 'created_before']);
      expectInvalid(await svc.api('GET', `/tasks?agent_name=${'a'.repeat(131)}`), ['query', 'agent_name']);
      expectInvalid(await svc.api('GET', '/tasks/task_x?relationships=agent'), ['query', 'relationships']);
      expectInvalid(await svc.api('GET', '/tasks/name/x?relationships=agents&relationships=tasks'), ['query', 'relationships']);
      expectInvalid(await svc.api('GET', '/tasks?created_after=2025-03-01T10:00:00'), ['query', 'created_after']);
      // Instants PostgreSQL cannot hold are refused here, not by the database.
      expectInvalid(await svc.api('GET', '/tasks?created_after=0000-01-01'), ['query', 'created_after']);
      expectInvalid(await svc.api('GET', `/tasks?created_before=${encodeURIComponent('0001-01-01T00:00:00+01:00')}`), ['query', 'created_before']);
      expectInvalid(await svc.api('GET', `/tasks?created_before=${encodeURIComponent('9999-12-31T23:00:00-02:00')}`), ['query', 'created_before']);
      expect((await svc.api('GET', '/tasks?created_after=0001-01-01&created_before=9999-12-31T23:59:59.999Z')).status).toBe(200);
    });
  });

  describe('bad input never gets a 5xx', () => {
    const cases: [string, string][] = [
      ['POST', '/tasks'],
      ['PATCH', '/tasks/task_x'],
      ['POST', '/tasks/migrate'],
      ['POST', '/agents/deploy'],
      ['POST', '/versions/register'],
      ['POST', '/branches/br_x/rollback'],
      ['POST', '/branches/br_x/retire'],
    ];
    test.each(cases)('%s %s: malformed JSON is a 422 at body', async (method, path) => {
      const res = await svc.api(method, path, { rawBody: '{"agent_id": ' });
      expect(res.status).toBe(422);
      expect(res.body.detail).toHaveLength(1);
      expect(res.body.detail[0].loc).toEqual(['body']);
      expect(res.body.detail[0].type).toBe('json_invalid');
    });
    test.each(cases)('%s %s: a body that is not an object is a 422', async (method, path) => {
      const res = await svc.api(method, path, { body: [1, 2] });
      expect(res.status).toBe(422);
      expect(res.body.detail[0].loc[0]).toBe('body');
    });
    test.each(cases)('%s %s: a body over 1 MiB is a 413', async (method, path) => {
      const res = await svc.api(method, path, { body: { pad: 'x'.repeat(1024 * 1024) } });
      expect(res).toMatchObject({ status: 413, body: { code: 'payload_too_large' } });
    });
    test('wrong types are 422s with the field named', async () => {
      const res = await svc.api('POST', '/tasks/migrate', { body: { from_version_id: 5, to_latest: 'yes', task_ids: 'task_a' } });
      expect(res.status).toBe(422);
      expect(res.body.detail.map((d: any) => d.loc)).toEqual([
        ['body', 'from_version_id'],
        ['body', 'task_ids'],
        ['body', 'to_latest'],
      ]);
    });
    test('a non-JSON content type is a 415 in the error shape', async () => {
      const res = await svc.api('POST', '/tasks', { rawBody: 'agent_id=x', headers: { 'content-type': 'application/x-www-form-urlencoded' } });
      expect(res).toMatchObject({ status: 415, body: { code: 'unsupported_media_type' } });
    });
  });
});
