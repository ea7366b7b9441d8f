import { describe, expect, test } from 'vitest';
import { Permissions } from '../../src/server/auth/policy.js';

const own = { type: 'agent', id: 'agt_own', namespaceId: 'ns_1' } as const;
const other = { type: 'agent', id: 'agt_other', namespaceId: 'ns_1' } as const;

describe('a runtime key', () => {
  // Grants it might (wrongly) hold are ignored: a runtime key is confined by what it is.
  const perms = new Permissions({ keyId: 'key_rt', orgId: 'org_1', name: 'runtime', runtimeAgentId: 'agt_own' }, [
    { resource_type: 'org', resource_id: 'org_1', role: 'admin', legacy_role: null },
  ]);

  test('may discover, read, run and write task data on its own agent, and nothing more', () => {
    expect(['discover', 'read', 'run', 'write_task_data', 'write', 'admin'].map((p) => perms.can(p as never, own))).toEqual([
      true,
      true,
      true,
      true,
      false,
      false,
    ]);
  });

  test('may do nothing on another agent, a namespace, a project or the org', () => {
    expect(perms.can('discover', other)).toBe(false);
    expect(perms.can('discover', { type: 'namespace', id: 'ns_1' })).toBe(false);
    expect(perms.can('read', { type: 'project', id: 'prj_1', namespaceId: 'ns_1' })).toBe(false);
    expect(perms.can('discover', { type: 'org', id: 'org_1' })).toBe(false);
    expect(perms.isOrgAdmin).toBe(false);
  });

  test('sees only its own agent in lists', () => {
    expect(perms.visible('agent', 'read')).toEqual({ all: false, namespaceIds: [], ids: ['agt_own'] });
    expect(perms.visible('agent', 'write')).toEqual({ all: false, namespaceIds: [], ids: [] });
    expect(perms.visible('project', 'discover')).toEqual({ all: false, namespaceIds: [], ids: [] });
  });
});

describe('write_task_data for other keys', () => {
  test('is exactly write on the agent', () => {
    const editor = new Permissions({ keyId: 'key_e', orgId: 'org_1', name: 'editor' }, [
      { resource_type: 'agent', resource_id: 'agt_own', role: 'editor', legacy_role: null, namespace_id: 'ns_1' },
    ]);
    const viewer = new Permissions({ keyId: 'key_v', orgId: 'org_1', name: 'viewer' }, [
      { resource_type: 'agent', resource_id: 'agt_own', role: 'viewer', legacy_role: null, namespace_id: 'ns_1' },
    ]);
    expect([editor.can('write_task_data', own), viewer.can('write_task_data', own)]).toEqual([true, false]);
    expect(editor.visible('agent', 'write_task_data')).toEqual(editor.visible('agent', 'write'));
  });
});
