import { describe, expect, test } from 'vitest';
import { ROLES_BY_RESOURCE_TYPE, type ResourceType, type Role } from '../../src/contract/common.js';
import type { Scope } from '../../src/contract/resources.js';
import type { Permission } from '../../src/server/auth/policy.js';
import { engines, useService } from '../support/service.js';
import { deployActive, nextHash } from '../support/fixtures.js';
import { allows, type ResourceName } from '../unit/policy-matrix.js';

/**
 * The permission matrix over HTTP: for each role of the spec's table, a key holding just that scope
 * tries one endpoint per permission on the agent its scope names, a sibling agent in the same
 * namespace and an agent in another namespace (and the matching projects). Allowed: success;
 * visible but not allowed: 403; not visible: 404. The expectations are the unit matrix's.
 */

const cases = (Object.keys(ROLES_BY_RESOURCE_TYPE) as ResourceType[]).flatMap((type) =>
  ROLES_BY_RESOURCE_TYPE[type].map((role) => ({ type, role: role as Role })),
);

type AgentFixture = { id: string; branch_id: string; ns: string; name: string; task_id: string; state_id: string };
type ProjectFixture = { id: string; ns: string; runOn: string };

describe.each(engines)('permission matrix over HTTP (%s)', (engine) => {
  const svc = useService(engine);
  let orgId: string;
  let namespaceIds: Record<string, string>;
  let agents: Record<'agent' | 'siblingAgent' | 'foreignAgent', AgentFixture>;
  let projects: Record<'project' | 'siblingProject' | 'foreignProject', ProjectFixture>;

  /** The agents and projects each case checks, in a database emptied before each test. */
  async function setUp() {
    const client = svc.client();
    orgId = (await client.whoami()).org_id;
    await client.createNamespace({ body: { name: 'Other', slug: 'other' } });
    namespaceIds = Object.fromEntries((await client.listNamespaces()).namespaces.map((n) => [n.slug, n.id]));
    const deployed = async (ns: string, name: string): Promise<AgentFixture> => {
      const d = await deployActive(svc, { agent: `${ns}/${name}` });
      const task = await client.createTask({ body: { agent_id: d.agent_id } });
      const state = await client.createState({ body: { task_id: task.id, agent_id: d.agent_id, state: {} } });
      return { id: d.agent_id, branch_id: d.branch_id, ns, name, task_id: task.id, state_id: state.id };
    };
    agents = {
      agent: await deployed('default', 'support-bot'),
      siblingAgent: await deployed('default', 'sibling'),
      foreignAgent: await deployed('other', 'bot'),
    };
    const project = async (ns: string, name: string, runOn: string): Promise<ProjectFixture> => ({
      id: (await client.createProject({ body: { namespace: ns, name } })).id,
      ns,
      runOn,
    });
    projects = {
      project: await project('default', 'docs', agents.agent.id),
      siblingProject: await project('default', 'notes', agents.agent.id),
      foreignProject: await project('other', 'docs', agents.foreignAgent.id),
    };
  }

  const scopeTarget = (type: ResourceType) => ({ org: orgId, namespace: namespaceIds.default, agent: agents.agent.id, project: projects.project.id })[type];

  const keyWith = async (scopes: Scope[]): Promise<string> => (await svc.client().createKey({ body: { name: 'matrix', scopes } })).secret;

  /** The status the policy promises for `permission` on `resource`, given the success status of the endpoint. */
  const want = (typeRole: string, resource: ResourceName, permission: Permission, success: number) =>
    allows(typeRole, resource, permission) ? success : allows(typeRole, resource, 'discover') ? 403 : 404;

  test.each(cases)('$type:$role', async ({ type, role }) => {
    await setUp();
    const typeRole = `${type}:${role}`;
    const key = await keyWith([{ resource_type: type, resource_id: scopeTarget(type), role }]);
    const got: Record<string, number> = {};
    const expected: Record<string, number> = {};
    const check = async (label: string, status: Promise<number>, wanted: number) => {
      got[label] = await status;
      expected[label] = wanted;
    };
    const call = async (method: string, path: string, body?: unknown, k = key) => (await svc.api(method, path, { key: k, body })).status;

    for (const name of ['agent', 'siblingAgent', 'foreignAgent'] as const) {
      const a = agents[name];
      await check(`${name} discover`, call('GET', `/agents/${a.id}`), want(typeRole, name, 'discover', 200));
      await check(`${name} read`, call('GET', `/branches/${a.branch_id}/versions`), want(typeRole, name, 'read', 200));
      // The upstream API's forms read as the existing routes do.
      await check(
        `${name} read (tasks by agent_name)`,
        call('GET', `/tasks?agent_name=${a.ns}/${a.name}&include_total=false`),
        want(typeRole, name, 'read', 200),
      );
      await check(`${name} read (task with its agents)`, call('GET', `/tasks/${a.task_id}?relationships=agents`), want(typeRole, name, 'read', 200));
      await check(`${name} run`, call('POST', '/tasks', { agent_id: a.id }), want(typeRole, name, 'run', 201));
      await check(
        `${name} write`,
        call('POST', `/agents/${a.ns}/${a.name}/environments`, { name: 'qa', branch_rules: ['qa'] }),
        want(typeRole, name, 'write', 201),
      );
      // Secrets: set by those who may write the agent (editors, owners, namespace and org admins); names listed by readers.
      await check(
        `${name} write (set a secret)`,
        call('PUT', `/agents/${a.ns}/${a.name}/secrets/API_TOKEN`, { value: 'v' }),
        want(typeRole, name, 'write', 200),
      );
      await check(`${name} read (list secrets)`, call('GET', `/agents/${a.ns}/${a.name}/secrets`), want(typeRole, name, 'read', 200));
    }
    // Deleting a state (which answers the record) needs what writing one does: write_task_data, which a user key has with write.
    for (const name of ['agent', 'siblingAgent', 'foreignAgent'] as const) {
      await check(`${name} delete state`, call('DELETE', `/states/${agents[name].state_id}`), want(typeRole, name, 'write', 200));
    }
    // A deploy addressed as namespace/name needs write on the agent; to an agent the key may not
    // discover it answers as deploying a new agent would: namespace admin needed (403, or 404 when
    // the key cannot see the namespace either), so the name's use does not leak.
    for (const name of ['agent', 'siblingAgent', 'foreignAgent'] as const) {
      const a = agents[name];
      const namespace = name === 'foreignAgent' ? 'otherNamespace' : 'namespace';
      const wanted = allows(typeRole, name, 'discover') ? want(typeRole, name, 'write', 201) : allows(typeRole, namespace, 'discover') ? 403 : 404;
      const body = {
        agent_name: `${a.ns}/${a.name}`,
        branch: 'main',
        git_hash: nextHash(),
        author_name: 'Ada',
        author_email: 'ada@example.com',
        image_url: 'registry.local/bot:2',
      };
      await check(`${name} write (deploy as namespace/name)`, call('POST', '/agents/deploy', body), wanted);
    }
    // Last: deleting an agent takes it out of the remaining checks.
    for (const name of ['agent', 'siblingAgent', 'foreignAgent'] as const) {
      await check(`${name} admin`, call('DELETE', `/agents/${agents[name].id}`), want(typeRole, name, 'admin', 200));
    }
    expect(got).toEqual(expected);
  });

  test.each(cases)('$type:$role on projects: discover (listed) and write (a task on its files)', async ({ type, role }) => {
    await setUp();
    const typeRole = `${type}:${role}`;
    // The key may also run tasks on an agent beside each project, so the project is what decides.
    const key = await keyWith([
      { resource_type: type, resource_id: scopeTarget(type), role },
      { resource_type: 'agent', resource_id: agents.agent.id, role: 'viewer' },
      { resource_type: 'agent', resource_id: agents.foreignAgent.id, role: 'viewer' },
    ]);
    const got: Record<string, unknown> = {};
    const expected: Record<string, unknown> = {};
    for (const ns of ['default', 'other']) {
      const listed = await svc.api('GET', `/projects?namespace=${ns}`, { key });
      got[`listed in ${ns}`] = listed.status === 200 ? listed.body.projects.map((p: { id: string }) => p.id).sort() : listed.status;
      expected[`listed in ${ns}`] = (['project', 'siblingProject', 'foreignProject'] as const)
        .filter((name) => projects[name].ns === ns && allows(typeRole, name, 'discover'))
        .map((name) => projects[name].id)
        .sort();
    }
    for (const name of ['project', 'siblingProject', 'foreignProject'] as const) {
      const p = projects[name];
      got[`${name} write`] = (await svc.api('POST', '/tasks', { key, body: { agent_id: p.runOn, project_id: p.id } })).status;
      expected[`${name} write`] = want(typeRole, name, 'write', 201);
    }
    expect(got).toEqual(expected);
  });
});
