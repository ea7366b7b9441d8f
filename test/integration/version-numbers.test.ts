import { sql } from 'kysely';
import { describe, expect, test } from 'vitest';
import { applySchemaChanges } from '../../src/server/store/db.js';
import { deploy, deployActive, nextHash } from '../support/fixtures.js';
import { engines, useService } from '../support/service.js';

describe.each(engines)('version numbers and version references (%s)', (engine) => {
  const svc = useService(engine);

  const versionsOf = async (agent: string) =>
    (await svc.client().listAgentVersions({ params: { namespace_slug: 'default', agent_name: agent }, query: { limit: 100 } })).versions;
  const numbersOf = async (agent: string) => (await versionsOf(agent)).map((v): [string, number] => [v.id, v.number]);

  test('every version of an agent gets the next number in deploy order, across branches', async () => {
    const first = await deploy(svc, { branch: 'main' });
    const second = await deploy(svc, { branch: 'feature/x' });
    const third = await deploy(svc, { branch: 'main' });
    const other = await deploy(svc, { agent: 'other-bot' });
    expect(third.version_number).toBe(3);
    expect(await numbersOf('support-bot')).toEqual([
      [third.version_id, 3],
      [second.version_id, 2],
      [first.version_id, 1],
    ]);
    expect((await svc.client().getVersion({ params: { version_id: other.version_id } })).number).toBe(1);
  });

  test('concurrent deploys of one agent to different branches get distinct numbers with no gap', async () => {
    await deploy(svc, { branch: 'main' });
    await Promise.all(['a', 'b', 'c', 'd', 'e'].map((branch) => deploy(svc, { branch })));
    const numbers = (await numbersOf('support-bot')).map(([, n]) => n).sort();
    expect(numbers).toEqual([1, 2, 3, 4, 5, 6]);
  });

  test('GET /agents/{ns}/{name}/versions/vN answers the version with that number', async () => {
    await deploy(svc);
    const second = await deploy(svc);
    const res = await svc.api('GET', '/agents/default/support-bot/versions/v2');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ id: second.version_id, number: 2 });
  });

  test('a git-hash prefix of four or more characters, any case, resolves to the one version with that commit', async () => {
    const hash = `ABCDEF${nextHash().slice(6)}`;
    const version = await deploy(svc, { hash: hash.toLowerCase() });
    await deploy(svc);
    const res = await svc.api('GET', '/agents/default/support-bot/versions/AbCd');
    expect(res.status).toBe(200);
    expect(res.body.id).toBe(version.version_id);
  });

  test('a prefix that two deploys of one commit share is 409 ambiguous_version naming both by number and deploy time', async () => {
    const hash = nextHash();
    await deployActive(svc, { hash, branch: 'main' });
    await deploy(svc, { hash, branch: 'feature/x' });
    const [v2, v1] = await versionsOf('support-bot');
    const res = await svc.api('GET', `/agents/default/support-bot/versions/${hash.slice(0, 8)}`);
    expect(res.status).toBe(409);
    expect(res.body).toEqual({
      code: 'ambiguous_version',
      detail: `${hash.slice(0, 8)} matches several versions of default/support-bot: v2 (${hash.slice(0, 12)}, deployed ${v2.deployed_at}), v1 (${hash.slice(0, 12)}, deployed ${v1.deployed_at}). Name one by vN or give more of the hash.`,
    });
  });

  test('a reference that is no version form is 422 on path.ref saying the minimum hash length', async () => {
    await deploy(svc);
    const res = await svc.api('GET', '/agents/default/support-bot/versions/abc');
    expect(res.status).toBe(422);
    expect(res.body.detail).toEqual([
      expect.objectContaining({ loc: ['path', 'ref'], msg: 'must be a ver_ id, vN (e.g. v3), or a git-hash prefix of at least 4 hex characters' }),
    ]);
  });

  test('a number the agent never reached is 404 naming the version; an unknown agent is 404 naming the agent', async () => {
    await deploy(svc);
    const missing = await svc.api('GET', '/agents/default/support-bot/versions/v9');
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ code: 'not_found', detail: 'Agent default/support-bot has no version v9' });
    const noAgent = await svc.api('GET', '/agents/default/nobody/versions/v1');
    expect(noAgent.status).toBe(404);
    expect(noAgent.body).toEqual({ code: 'not_found', detail: 'Agent default/nobody was not found' });
  });

  test('a ver_ id of another agent is not found under this one', async () => {
    await deploy(svc);
    const other = await deploy(svc, { agent: 'other-bot' });
    const res = await svc.api('GET', `/agents/default/support-bot/versions/${other.version_id}`);
    expect(res.status).toBe(404);
  });

  test('schema change 006 numbers existing versions per agent by deployed_at, and the next deploy continues after them', async () => {
    const a = await deploy(svc);
    const b = await deploy(svc);
    const c = await deploy(svc);
    const db = svc.store.db;
    // Back to the schema before 006, with deploy times in another order than the ids.
    await sql`DROP INDEX versions_agent_number`.execute(db);
    await sql`DROP INDEX versions_agent_git_hash`.execute(db);
    await sql`ALTER TABLE versions DROP COLUMN number`.execute(db);
    await sql`ALTER TABLE agents DROP COLUMN last_version_number`.execute(db);
    await sql`DELETE FROM schema_changes WHERE name = '006_version_numbers'`.execute(db);
    await sql`UPDATE versions SET deployed_at = now() - interval '1 day' WHERE id = ${c.version_id}`.execute(db);
    await applySchemaChanges(db);
    expect(await numbersOf('support-bot')).toEqual([
      [b.version_id, 3],
      [a.version_id, 2],
      [c.version_id, 1],
    ]);
    expect((await deploy(svc)).version_number).toBe(4);
  });
});
