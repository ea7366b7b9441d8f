import { beforeEach, describe, expect, test } from 'vitest';
import { State } from '../../src/contract/resources.js';
import type { EndpointInput } from '../../src/contract/endpoints.js';
import { pruneHistory } from '../../src/server/domain/history.js';
import { engines, useService } from '../support/service.js';
import { createTask, deployActive, type Deployed } from '../support/fixtures.js';
import { scopedKey } from '../support/scoped-key.js';
import { expectError, expectInvalid, expectMalformed, expectOversize, MALFORMED_JSON, OVERSIZE_BODY } from '../support/bad-input.js';

const KiB = 1024;

describe.each(engines)('states (%s)', (engine) => {
  const svc = useService(engine);
  let agent: Deployed;
  let task: { id: string };
  beforeEach(async () => {
    agent = await deployActive(svc);
    task = await createTask(svc);
  });

  const create = (body: unknown, key?: string) => svc.api('POST', '/states', { body, key });
  /** Setup: the state of `agentId` (default: the task's agent) on the task, through the typed client. */
  const createFor = (state: Record<string, unknown>, agentId = agent.agent_id) =>
    svc.client().createState({ body: { task_id: task.id, agent_id: agentId, state } });
  const merge = (id: string, state: Record<string, unknown>, headers?: Record<string, string>) =>
    svc.api('PATCH', `/states/${id}`, { body: { state }, headers });
  const stored = async (id: string) => (await svc.api('GET', `/states/${id}`)).body as State;

  describe('POST /states', () => {
    test('creates the state of a (task, agent) pair: 200, version 1, ETag "1"', async () => {
      const res = await create({ task_id: task.id, agent_id: agent.agent_id, state: { step: 1, notes: ['a'] } });
      expect(res.status).toBe(200);
      const state = State.strict().parse(res.body);
      expect(state).toMatchObject({ task_id: task.id, agent_id: agent.agent_id, state: { step: 1, notes: ['a'] }, version: 1 });
      expect(state.id).toMatch(/^st_/);
      expect(res.headers.get('etag')).toBe('"1"');
    });

    test('a second state for the same pair is 409 state_exists', async () => {
      await createFor({ a: 1 });
      expectError(
        await create({ task_id: task.id, agent_id: agent.agent_id, state: {} }),
        409,
        'state_exists',
        `Task ${task.id} already has a state for agent support-bot (${agent.agent_id})`,
      );
    });

    test('concurrent creates for one pair: exactly one succeeds, the rest are 409', async () => {
      const results = await Promise.all(Array.from({ length: 10 }, (_, i) => create({ task_id: task.id, agent_id: agent.agent_id, state: { i } })));
      expect(results.map((r) => r.status).sort()).toEqual([200, ...Array(9).fill(409)]);
      expect((await svc.api('GET', `/states?task_id=${task.id}`)).body.total).toBe(1);
    });

    test('the same task may hold a state per agent', async () => {
      const helper = await deployActive(svc, { agent: 'helper-bot' });
      await createFor({ mine: true });
      const res = await create({ task_id: task.id, agent_id: helper.agent_id, state: { theirs: true } });
      expect(res.status).toBe(200);
    });

    test('an unknown task or agent is 404', async () => {
      expectError(await create({ task_id: 'task_nope', agent_id: agent.agent_id, state: {} }), 404, 'not_found', 'Task task_nope was not found');
      expectError(await create({ task_id: task.id, agent_id: 'agt_nope', state: {} }), 404, 'not_found', 'Agent agt_nope was not found');
    });

    test('a state object over 256 KiB is 413 state_too_large; just under is accepted', async () => {
      const over = await create({ task_id: task.id, agent_id: agent.agent_id, state: { blob: 'x'.repeat(256 * KiB) } });
      expectError(over, 413, 'state_too_large', `A state object may be at most ${256 * KiB} bytes serialized`);
      const under = await create({ task_id: task.id, agent_id: agent.agent_id, state: { blob: 'x'.repeat(256 * KiB - 100) } });
      expect(under.status).toBe(200);
    });

    test('bad bodies: malformed JSON, wrong types, missing fields, oversize', async () => {
      expectMalformed(await svc.api('POST', '/states', { rawBody: MALFORMED_JSON }));
      expectInvalid(await create({ task_id: task.id, agent_id: agent.agent_id, state: [1, 2] }), ['body', 'state'], 'invalid_type');
      expectInvalid(await create({ task_id: task.id, agent_id: agent.agent_id, state: 'text' }), ['body', 'state'], 'invalid_type');
      expectInvalid(await create({ task_id: 7, agent_id: agent.agent_id, state: {} }), ['body', 'task_id'], 'invalid_type');
      expectInvalid(await create({ task_id: task.id, agent_id: agent.agent_id }), ['body', 'state'], 'missing');
      expectOversize(await svc.api('POST', '/states', { rawBody: OVERSIZE_BODY }));
    });
  });

  describe('GET /states and /states/{id}', () => {
    test('find by task, by agent, or both; at least one is required (422)', async () => {
      const helper = await deployActive(svc, { agent: 'helper-bot' });
      const mine = await createFor({ a: 1 });
      const theirs = await createFor({ b: 2 }, helper.agent_id);
      const ids = async (query: string) => (await svc.api('GET', `/states?${query}`)).body.states.map((s: State) => s.id);
      expect(await ids(`task_id=${task.id}`)).toEqual([mine.id, theirs.id]);
      expect(await ids(`agent_id=${helper.agent_id}`)).toEqual([theirs.id]);
      expect(await ids(`task_id=${task.id}&agent_id=${agent.agent_id}`)).toEqual([mine.id]);
      expectInvalid(await svc.api('GET', '/states'), ['query'], 'missing');
    });

    test('limit and page_number page the list (total counts every match); order_by and order_direction sort it', async () => {
      const client = svc.client();
      const helpers = [];
      for (const name of ['helper-a', 'helper-b', 'helper-c']) helpers.push(await deployActive(svc, { agent: name }));
      const mine = await createFor({ n: 0 });
      const others = [];
      for (const [i, helper] of helpers.entries()) others.push(await createFor({ n: i + 1 }, helper.agent_id));
      const all = [mine, ...others];
      const when = ['2025-01-01T00:00:00Z', '2025-01-02T00:00:00Z', '2025-01-03T00:00:00Z', '2025-01-04T00:00:00Z'];
      for (const [i, st] of all.entries())
        await svc.store.db
          .updateTable('states')
          .set({ created_at: when[i], updated_at: when[3 - i] })
          .where('id', '=', st.id)
          .execute();
      const ids = async (query: EndpointInput<'listStates'>['query']) => {
        const listed = await client.listStates({ query: { task_id: task.id, ...query } });
        return { ids: listed.states.map((st) => st.id), total: listed.total };
      };
      // Oldest first by default, as the list always was.
      expect(await ids({})).toEqual({ ids: all.map((st) => st.id), total: 4 });
      expect(await ids({ limit: 2, page_number: 2 })).toEqual({ ids: [others[1].id, others[2].id], total: 4 });
      expect(await ids({ order_direction: 'desc', limit: 1 })).toEqual({ ids: [others[2].id], total: 4 });
      expect(await ids({ order_by: 'updated_at' })).toEqual({ ids: [...all].reverse().map((st) => st.id), total: 4 });
      expect(await ids({ limit: 2, page_number: 3 })).toEqual({ ids: [], total: 4 });
    });

    test('a key sees only the states of agents it may read, and total counts only those', async () => {
      const helper = await deployActive(svc, { agent: 'helper-bot' });
      const mine = await createFor({ a: 1 });
      await createFor({ b: 2 }, helper.agent_id);
      const key = await scopedKey(svc, [{ resource_type: 'agent', resource_id: agent.agent_id, role: 'viewer' }]);
      expect(await svc.client(key).listStates({ query: { task_id: task.id } })).toEqual({ states: [mine], total: 1 });
    });

    test('bad paging and ordering values are 422s at their query field', async () => {
      const res = await svc.api('GET', `/states?task_id=${task.id}&limit=0&page_number=0&order_by=version&order_direction=up`);
      expect(res.body.detail.map((d: { loc: unknown }) => d.loc)).toEqual([
        ['query', 'limit'],
        ['query', 'page_number'],
        ['query', 'order_by'],
        ['query', 'order_direction'],
      ]);
      expectInvalid(await svc.api('GET', `/states?task_id=${task.id}&limit=1001`), ['query', 'limit']);
    });

    test('unknown filters are 404', async () => {
      expectError(await svc.api('GET', '/states?task_id=task_nope'), 404, 'not_found', 'Task task_nope was not found');
      expectError(await svc.api('GET', '/states?agent_id=agt_nope'), 404, 'not_found', 'Agent agt_nope was not found');
    });

    test('get one state with its ETag; unknown ids are 404', async () => {
      const created = await createFor({ a: 1 });
      const res = await svc.api('GET', `/states/${created.id}`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual(created);
      expect(res.headers.get('etag')).toBe('"1"');
      expectError(await svc.api('GET', '/states/st_nope'), 404, 'not_found', 'State st_nope was not found');
    });
  });

  describe('PUT /states/{id} (replace) and PATCH /states/{id} (merge)', () => {
    test('replace swaps the whole object; merge keeps the keys it does not name', async () => {
      const s = await createFor({ a: 1, b: 2 });
      const replaced = await svc.api('PUT', `/states/${s.id}`, { body: { task_id: task.id, agent_id: agent.agent_id, state: { c: 3 } } });
      expect(replaced.status).toBe(200);
      expect(replaced.body).toMatchObject({ state: { c: 3 }, version: 2 });
      expect(replaced.headers.get('etag')).toBe('"2"');
      const merged = await merge(s.id, { d: 4, c: 30 });
      expect(merged.body).toMatchObject({ state: { c: 30, d: 4 }, version: 3 });
      expect(merged.headers.get('etag')).toBe('"3"');
    });

    test('merge with a top-level null deletes that key; nested nulls are stored as values', async () => {
      const s = await createFor({ keep: 1, drop: 2, nested: { x: 1 } });
      const res = await merge(s.id, { drop: null, nested: { x: null, y: 2 }, absent: null });
      expect(res.status).toBe(200);
      expect(res.body.state).toEqual({ keep: 1, nested: { x: null, y: 2 } });
    });

    test('merge replaces a nested object as a whole (top-level keys only)', async () => {
      const s = await createFor({ config: { a: 1, b: 2 } });
      expect((await merge(s.id, { config: { a: 9 } })).body.state).toEqual({ config: { a: 9 } });
    });

    test('50 concurrent merges each adding its own key: all 50 keys present, version 51', async () => {
      const s = await createFor({});
      const results = await Promise.all(Array.from({ length: 50 }, (_, i) => merge(s.id, { [`k${i}`]: i })));
      expect(results.every((r) => r.status === 200)).toBe(true);
      const after = await stored(s.id);
      expect(after.version).toBe(51);
      expect(Object.keys(after.state).sort()).toEqual(Array.from({ length: 50 }, (_, i) => `k${i}`).sort());
      expect(new Set(results.map((r) => r.body.version)).size).toBe(50);
    });

    test('replace needs the record’s task_id and agent_id: 422 otherwise', async () => {
      const s = await createFor({ a: 1 });
      const helper = await deployActive(svc, { agent: 'helper-bot' });
      const other = await createTask(svc);
      expectInvalid(await svc.api('PUT', `/states/${s.id}`, { body: { task_id: other.id, agent_id: agent.agent_id, state: {} } }), ['body', 'task_id']);
      expectInvalid(await svc.api('PUT', `/states/${s.id}`, { body: { task_id: task.id, agent_id: helper.agent_id, state: {} } }), ['body', 'agent_id']);
      expect((await stored(s.id)).version).toBe(1);
    });

    test('a merge whose result would pass 256 KiB is 413 and changes nothing', async () => {
      const s = await createFor({ big: 'x'.repeat(200 * KiB) });
      expectError(await merge(s.id, { more: 'y'.repeat(100 * KiB) }), 413, 'state_too_large');
      expect((await stored(s.id)).version).toBe(1);
      expectError(
        await svc.api('PUT', `/states/${s.id}`, { body: { task_id: task.id, agent_id: agent.agent_id, state: { big: 'z'.repeat(300 * KiB) } } }),
        413,
        'state_too_large',
      );
    });

    test('bad bodies and unknown ids', async () => {
      const s = await createFor({});
      expectMalformed(await svc.api('PATCH', `/states/${s.id}`, { rawBody: MALFORMED_JSON }));
      expectMalformed(await svc.api('PUT', `/states/${s.id}`, { rawBody: MALFORMED_JSON }));
      expectInvalid(await svc.api('PATCH', `/states/${s.id}`, { body: { a: 1 } }), ['body', 'state'], 'missing');
      expectInvalid(await svc.api('PATCH', `/states/${s.id}`, { body: { state: 5 } }), ['body', 'state'], 'invalid_type');
      const missingIds = await svc.api('PUT', `/states/${s.id}`, { body: { state: {} } });
      expect(missingIds.status).toBe(422);
      expect(missingIds.body.detail).toEqual([
        { loc: ['body', 'task_id'], msg: 'Field required', type: 'missing' },
        { loc: ['body', 'agent_id'], msg: 'Field required', type: 'missing' },
      ]);
      expectOversize(await svc.api('PATCH', `/states/${s.id}`, { rawBody: OVERSIZE_BODY }));
      expectOversize(await svc.api('PUT', `/states/${s.id}`, { rawBody: OVERSIZE_BODY }));
      expectError(await merge('st_nope', { a: 1 }), 404, 'not_found', 'State st_nope was not found');
      expectError(await svc.api('PUT', '/states/st_nope', { body: { task_id: task.id, agent_id: agent.agent_id, state: {} } }), 404, 'not_found');
    });
  });

  describe('POST /states/merge (by pair, creating an empty state first)', () => {
    const mergeByPair = (state: Record<string, unknown>, key?: string) =>
      svc.api('POST', '/states/merge', { body: { task_id: task.id, agent_id: agent.agent_id, state }, key });

    test('with no state yet: a new record of the merge (nulls left out), version 1, ETag "1"', async () => {
      const res = await mergeByPair({ last: 'a', gone: null });
      expect(res.status).toBe(200);
      expect(State.strict().parse(res.body)).toMatchObject({ task_id: task.id, agent_id: agent.agent_id, state: { last: 'a' }, version: 1 });
      expect(res.headers.get('etag')).toBe('"1"');
    });

    test('with a state: merges like PATCH /states/{id} (null deletes a key), version + 1', async () => {
      const s = await createFor({ a: 1, b: 2 });
      const res = await mergeByPair({ b: null, c: 3 });
      expect(res.body).toMatchObject({ id: s.id, state: { a: 1, c: 3 }, version: 2 });
    });

    test('20 concurrent first merges each adding its own key: one record, all 20 keys, version 20', async () => {
      const results = await Promise.all(Array.from({ length: 20 }, (_, i) => mergeByPair({ [`k${i}`]: i })));
      expect(results.map((r) => r.status)).toEqual(Array(20).fill(200));
      const { states, total } = (await svc.api('GET', `/states?task_id=${task.id}`)).body;
      expect(total).toBe(1);
      expect(states[0].version).toBe(20);
      expect(Object.keys(states[0].state).sort()).toEqual(Array.from({ length: 20 }, (_, i) => `k${i}`).sort());
    });

    test('over 256 KiB is 413 state_too_large, new or merged, and changes nothing', async () => {
      expectError(await mergeByPair({ big: 'x'.repeat(257 * KiB) }), 413, 'state_too_large');
      expect((await svc.api('GET', `/states?task_id=${task.id}`)).body.total).toBe(0);
      const s = await createFor({ big: 'x'.repeat(200 * KiB) });
      expectError(await mergeByPair({ more: 'y'.repeat(100 * KiB) }), 413, 'state_too_large');
      expect((await stored(s.id)).version).toBe(1);
    });

    test('an unknown task or agent is 404; a viewer may not write (403); a key without access gets 404', async () => {
      expectError(
        await svc.api('POST', '/states/merge', { body: { task_id: 'task_nope', agent_id: agent.agent_id, state: {} } }),
        404,
        'not_found',
        'Task task_nope was not found',
      );
      expectError(
        await svc.api('POST', '/states/merge', { body: { task_id: task.id, agent_id: 'agt_nope', state: {} } }),
        404,
        'not_found',
        'Agent agt_nope was not found',
      );
      const viewer = await scopedKey(svc, [{ resource_type: 'agent', resource_id: agent.agent_id, role: 'viewer' }]);
      expectError(await mergeByPair({ a: 1 }, viewer), 403, 'forbidden');
      expectError(await mergeByPair({ a: 1 }, await scopedKey(svc, [])), 404, 'not_found');
      expect((await svc.api('GET', `/states?task_id=${task.id}`)).body.total).toBe(0);
    });

    test('bad bodies: malformed JSON, a missing or non-object state', async () => {
      expectMalformed(await svc.api('POST', '/states/merge', { rawBody: MALFORMED_JSON }));
      expectInvalid(await svc.api('POST', '/states/merge', { body: { task_id: task.id, agent_id: agent.agent_id } }), ['body', 'state'], 'missing');
      expectInvalid(
        await svc.api('POST', '/states/merge', { body: { task_id: task.id, agent_id: agent.agent_id, state: [1] } }),
        ['body', 'state'],
        'invalid_type',
      );
    });
  });

  describe('If-Match', () => {
    test('a stale If-Match is 412 precondition_failed with the current ETag, on PUT, PATCH and DELETE', async () => {
      const s = await createFor({ a: 1 });
      await merge(s.id, { b: 2 }); // now version 2
      const stale = { 'if-match': '"1"' };
      const attempts = [
        await svc.api('PUT', `/states/${s.id}`, { body: { task_id: task.id, agent_id: agent.agent_id, state: {} }, headers: stale }),
        await merge(s.id, { c: 3 }, stale),
        await svc.api('DELETE', `/states/${s.id}`, { headers: stale }),
      ];
      for (const res of attempts) {
        expectError(res, 412, 'precondition_failed', `State ${s.id} is at version 2; If-Match does not name it`);
        expect(res.headers.get('etag')).toBe('"2"');
      }
      expect(await stored(s.id)).toMatchObject({ version: 2, state: { a: 1, b: 2 } });
    });

    test('a current If-Match (quoted, weak or *) applies the write', async () => {
      const s = await createFor({ a: 1 });
      expect((await merge(s.id, { b: 2 }, { 'if-match': '"1"' })).body.version).toBe(2);
      expect((await merge(s.id, { c: 3 }, { 'if-match': 'W/"2"' })).body.version).toBe(3);
      expect((await merge(s.id, { d: 4 }, { 'if-match': '*' })).body.version).toBe(4);
      expect((await svc.api('DELETE', `/states/${s.id}`, { headers: { 'if-match': '"4"' } })).status).toBe(200);
    });

    test('an If-Match naming no version never matches: 412', async () => {
      const s = await createFor({ a: 1 });
      expectError(await merge(s.id, { b: 2 }, { 'if-match': 'garbage' }), 412, 'precondition_failed');
    });
  });

  describe('DELETE /states/{id}', () => {
    test('deletes: the record as it was and a message, then 404; the pair may have a new state', async () => {
      const s = await createFor({ a: 1 });
      await merge(s.id, { b: 2 });
      const before = await stored(s.id);
      const res = await svc.api('DELETE', `/states/${s.id}`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ ...before, message: `State ${s.id} deleted` });
      expect(before).toMatchObject({ state: { a: 1, b: 2 }, version: 2 });
      expectError(await svc.api('GET', `/states/${s.id}`), 404, 'not_found');
      expectError(await svc.api('DELETE', `/states/${s.id}`), 404, 'not_found');
      expect((await create({ task_id: task.id, agent_id: agent.agent_id, state: {} })).status).toBe(200);
    });

    test('bad requests: unknown ids are 404, malformed and oversize bodies are 422 and 413', async () => {
      const s = await createFor({ a: 1 });
      expectError(await svc.api('DELETE', '/states/st_nope'), 404, 'not_found', 'State st_nope was not found');
      expectMalformed(await svc.api('DELETE', `/states/${s.id}`, { rawBody: MALFORMED_JSON }));
      expectOversize(await svc.api('DELETE', `/states/${s.id}`, { rawBody: OVERSIZE_BODY }));
      expect((await stored(s.id)).version).toBe(1);
    });
  });

  describe('permissions', () => {
    test('a viewer of the agent may read its states but not write them: 403', async () => {
      const s = await createFor({ a: 1 });
      const viewer = await scopedKey(svc, [{ resource_type: 'agent', resource_id: agent.agent_id, role: 'viewer' }]);
      expect((await svc.api('GET', `/states/${s.id}`, { key: viewer })).status).toBe(200);
      expect((await svc.api('GET', `/states?agent_id=${agent.agent_id}`, { key: viewer })).body.total).toBe(1);
      const denied = `This API key may not write State ${s.id}`;
      expectError(await svc.api('PATCH', `/states/${s.id}`, { body: { state: { b: 1 } }, key: viewer }), 403, 'forbidden', denied);
      expectError(
        await svc.api('PUT', `/states/${s.id}`, { body: { task_id: task.id, agent_id: agent.agent_id, state: {} }, key: viewer }),
        403,
        'forbidden',
        denied,
      );
      expectError(await svc.api('DELETE', `/states/${s.id}`, { key: viewer }), 403, 'forbidden', denied);
      expectError(await create({ task_id: task.id, agent_id: agent.agent_id, state: {} }, viewer), 403, 'forbidden');
    });

    test('an editor of the agent may write its states', async () => {
      const s = await createFor({ a: 1 });
      const editor = await scopedKey(svc, [{ resource_type: 'agent', resource_id: agent.agent_id, role: 'editor' }]);
      expect((await svc.api('PATCH', `/states/${s.id}`, { body: { state: { b: 1 } }, key: editor })).status).toBe(200);
    });

    test('a key without access to the agent gets 404 for its states', async () => {
      const s = await createFor({ a: 1 });
      const nothing = await scopedKey(svc, []);
      expectError(await svc.api('GET', `/states/${s.id}`, { key: nothing }), 404, 'not_found', `State ${s.id} was not found`);
      expectError(await svc.api('PATCH', `/states/${s.id}`, { body: { state: {} }, key: nothing }), 404, 'not_found');
      expectError(await svc.api('GET', `/states?agent_id=${agent.agent_id}`, { key: nothing }), 404, 'not_found');
    });
  });

  describe('GET /tasks/{id}/states/history', () => {
    const history = (query = '', key?: string) => svc.api('GET', `/tasks/${task.id}/states/history${query}`, { key });
    /** Moves the task's sequence on (a message), so the next write keeps the value it replaces. */
    const nextSequence = () => svc.client().createMessage({ body: { task_id: task.id, content: 'a turn' } });
    const entry = (s: State, sequence_id: number) => ({
      task_id: task.id,
      agent_id: agent.agent_id,
      sequence_id,
      state: s.state,
      written_at: s.updated_at,
      written_by_version_id: agent.version_id,
    });

    test('each value replaced at a later sequence, newest first, with when and by which version; the last of a sequence only', async () => {
      const first = await createFor({ step: 1 });
      const { sequence_id: one } = await nextSequence();
      await merge(first.id, { step: 2 });
      const third = (await merge(first.id, { step: 3 })).body as State;
      const { sequence_id: two } = await nextSequence();
      await merge(first.id, { step: 4 });
      const res = await history();
      expect(res.status).toBe(200);
      // Step 2 was replaced at its own sequence (by step 3): only the last value of a sequence is kept.
      // The first value was written at the sequence just before the message's (the task's creation).
      expect(res.body).toEqual({ history: [entry(third, one), entry(first, one - 1)], total: 2, since_migration: null });
      expect((await history('?order_direction=asc&limit=1&page_number=2')).body.history).toEqual([entry(third, one)]);
      expect(two).toBeGreaterThan(one);
    });

    test('starts at the task’s last migration: values written before it are left out', async () => {
      const s = await createFor({ shape: 'v1' });
      const { sequence_id: before } = await nextSequence();
      const v2 = await deployActive(svc, { are_tasks_sticky: true });
      await svc.client().migrateTasks({ body: { task_ids: [task.id], to_version_id: v2.version_id } });
      // The v1 value is replaced after the move: it was written before it, so it is not shown.
      const upgraded = (await merge(s.id, { shape: 'v2' })).body as State;
      await nextSequence();
      await merge(s.id, { shape: 'v2', more: true });
      const res = await history();
      // When it moved: the migration's record and the history's start are the same moment.
      const [migration] = (await svc.client().listMigrations({ query: {} })).migrations;
      expect(res.body).toEqual({
        history: [{ ...entry(upgraded, before), written_by_version_id: v2.version_id }],
        total: 1,
        since_migration: migration.created_at,
      });
    });

    test('a write after a move at the same sequence (an onMigrate) keeps the value as it stood before the move; a rehearsal reads the newest', async () => {
      const s = await createFor({ shape: 'v1', n: 1 });
      const { sequence_id: at } = await nextSequence();
      const beforeMove = (await merge(s.id, { shape: 'v1', n: 2 })).body as State;
      const v2 = await deployActive(svc, { are_tasks_sticky: true });
      await svc.client().migrateTasks({ body: { task_ids: [task.id], to_version_id: v2.version_id } });
      // The move took no sequence number: the new version's first write is at the same one as v1's last.
      const upgraded = (await merge(s.id, { shape: 'v2', n: 2 })).body as State;
      const { sequence_id: next } = await nextSequence();
      await merge(s.id, { shape: 'v2', n: 3 });
      expect(next).toBe(at + 1);
      const keptHistory = () =>
        svc.store.db
          .selectFrom('state_history')
          .select(['sequence_id', 'state', 'written_by_version_id'])
          .where('task_id', '=', task.id)
          .orderBy('sequence_id')
          .orderBy('written_at')
          .execute();
      const kept = await keptHistory();
      expect(kept).toEqual([
        { sequence_id: at - 1, state: { shape: 'v1', n: 1 }, written_by_version_id: agent.version_id },
        { sequence_id: at, state: beforeMove.state, written_by_version_id: agent.version_id },
        { sequence_id: at, state: upgraded.state, written_by_version_id: v2.version_id },
      ]);
      // The history since the move is as before: the pre-move value was written before it.
      expect((await history()).body.history.map((h: { state: unknown }) => h.state)).toEqual([upgraded.state]);
      // A rehearsal from the next sequence starts from the last value written at this one (the upgraded one).
      const shadowState = async (from_sequence: number) => {
        const started = await svc.api('POST', '/rehearsals', { body: { task_ids: [task.id], to_version_id: v2.version_id, from_sequence } });
        expect(started.status).toBe(201);
        const shadow = started.body.tasks[0].shadow_task_id as string;
        return (await svc.client().listStates({ query: { task_id: shadow } })).states.map((x) => x.state);
      };
      expect(await shadowState(next)).toEqual([upgraded.state]);
      expect(await shadowState(at)).toEqual([{ shape: 'v1', n: 1 }]);
      // Retention cuts at the first sequence after the move and keeps the sequence before it whole.
      await pruneHistory(svc.store.db, 30 * 86_400_000);
      expect(await keptHistory()).toEqual(kept.slice(1));
    });

    test('a deploy that moves the task (not sticky) starts the history again too', async () => {
      const s = await createFor({ shape: 'v1' });
      await nextSequence();
      await merge(s.id, { shape: 'v1', more: true });
      expect((await history()).body.total).toBe(1);
      const v2 = await deployActive(svc);
      expect((await svc.client().getTask({ params: { task_id: task.id } })).current_version_id).toBe(v2.version_id);
      const res = await history();
      expect(res.body).toMatchObject({ history: [], total: 0 });
      expect(Date.parse(res.body.since_migration)).toBeGreaterThan(Date.parse((await stored(s.id)).updated_at));
    });

    test('a key sees the history of the agents it may read; a task it may not discover is a 404; bad paging is a 422', async () => {
      const helper = await deployActive(svc, { agent: 'helper-bot' });
      const mine = await createFor({ a: 1 });
      const theirs = await createFor({ b: 1 }, helper.agent_id);
      await nextSequence();
      await merge(mine.id, { a: 2 });
      await merge(theirs.id, { b: 2 });
      expect((await history()).body.total).toBe(2);
      expect((await history(`?agent_id=${helper.agent_id}`)).body.history.map((h: { state: unknown }) => h.state)).toEqual([{ b: 1 }]);
      const viewer = await scopedKey(svc, [{ resource_type: 'agent', resource_id: agent.agent_id, role: 'viewer' }]);
      expect((await svc.client(viewer).listStateHistory({ params: { task_id: task.id }, query: {} })).history.map((h) => h.state)).toEqual([{ a: 1 }]);
      const nothing = await scopedKey(svc, []);
      expectError(await history('', nothing), 404, 'not_found', `Task ${task.id} was not found`);
      expectError(await svc.api('GET', '/tasks/task_nope/states/history'), 404, 'not_found', 'Task task_nope was not found');
      expectInvalid(await history('?limit=0'), ['query', 'limit']);
      expectError(await history('?agent_id=agt_nope'), 404, 'not_found', 'Agent agt_nope was not found');
    });
  });
});
