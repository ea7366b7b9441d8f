import { describe, expect, test } from 'vitest';
import type { Preset } from '../../src/contract/resources.js';
import { askDetails, chooseGroups, choosePreset, configureScopes, NO_GROUP_WARNING, review, type KeyDraft, type ResourceChoices } from '../../src/cli/prompts/key-wizard.js';
import type { Choice, Prompter } from '../../src/cli/prompts/prompter.js';

type Asked = { kind: string; message: string; choices?: Choice<unknown>[] };

/** Answers prompts from a script, in order, and records what was asked. */
function scripted(answers: unknown[]): Prompter & { asked: Asked[] } {
  const asked: Asked[] = [];
  const next = (kind: string, message: string, choices?: Choice<unknown>[]) => {
    asked.push({ kind, message, choices });
    if (!answers.length) throw new Error(`unexpected prompt: ${message}`);
    const answer = answers.shift();
    return Promise.resolve(typeof answer === 'function' ? answer(choices) : answer);
  };
  return {
    asked,
    select: (o) => next('select', o.message, o.choices as Choice<unknown>[]) as never,
    checkbox: (o) => next('checkbox', o.message, o.choices as Choice<unknown>[]) as never,
    input: (o) => next('input', o.message) as never,
    password: (o) => next('password', o.message) as never,
    confirm: (o) => next('confirm', o.message) as never,
  };
}

const presets: Preset[] = [
  { id: 'deploy', name: 'Deploy', use: 'CI/CD and deployments', scopes: [{ resource_type: 'namespace', role: 'admin' }, { resource_type: 'agent', role: 'editor' }, { resource_type: 'project', role: 'editor' }] },
  { id: 'read-only', name: 'Read-Only', use: 'Monitoring, dashboards', scopes: [{ resource_type: 'agent', role: 'viewer' }, { resource_type: 'project', role: 'viewer' }] },
  { id: 'custom', name: 'Custom', use: 'Manual scope configuration', scopes: [] },
];

const resources: ResourceChoices = {
  org: [{ name: 'this org', value: 'org_1' }],
  namespace: [{ name: 'default (ns_1)', value: 'ns_1' }],
  agent: [
    { name: 'default/bot (agt_1)', value: 'agt_1' },
    { name: 'default/helper (agt_2)', value: 'agt_2' },
  ],
  project: [],
};

describe('key wizard step 1: preset', () => {
  test('offers every preset with its use and scopes, and returns the chosen one', async () => {
    const prompter = scripted([presets[1]]);
    expect(await choosePreset(prompter, presets)).toBe(presets[1]);
    expect(prompter.asked[0].choices!.map((c) => [c.name, c.description])).toEqual([
      ['Deploy — CI/CD and deployments', 'Scopes: namespace:admin, agent:editor, project:editor'],
      ['Read-Only — Monitoring, dashboards', 'Scopes: agent:viewer, project:viewer'],
      ['Custom — Manual scope configuration', 'Scopes: no scopes'],
    ]);
  });
});

describe('key wizard step 2: scopes', () => {
  test('pre-fills the preset’s roles on the picked resources; types with nothing visible are skipped', async () => {
    const prompter = scripted([['ns_1'], ['agt_2'], 'done']);
    const scopes = await configureScopes(prompter, presets[0], resources);
    expect(scopes).toEqual([
      { resource_type: 'namespace', resource_id: 'ns_1', role: 'admin' },
      { resource_type: 'agent', resource_id: 'agt_2', role: 'editor' },
    ]);
    expect(prompter.asked.map((a) => a.message)).toEqual([
      'Step 2 of 4 · Scopes: which namespaces get admin?',
      'Step 2 of 4 · Scopes: which agents get editor?',
      'Step 2 of 4 · Scopes: namespace:ns_1:admin, agent:agt_2:editor',
    ]);
  });

  test('adds a scope by type, resource and role, and removes scopes', async () => {
    const prompter = scripted([[], 'add', 'agent', 'agt_1', 'owner', 'add', 'org', 'org_1', 'member', 'remove', [1], 'done']);
    const scopes = await configureScopes(prompter, presets[1], resources);
    expect(scopes).toEqual([{ resource_type: 'agent', resource_id: 'agt_1', role: 'owner' }]);
    const roleQuestion = prompter.asked.find((a) => a.message === 'Role')!;
    expect(roleQuestion.choices!.map((c) => c.value)).toEqual(['discoverer', 'viewer', 'editor', 'owner', 'executor']);
  });

  test('Done is disabled while there is no scope', async () => {
    const prompter = scripted([(choices: Choice<string>[]) => (choices.find((c) => c.value === 'done')!.disabled ? 'add' : 'done'), 'namespace', 'ns_1', 'admin', 'done']);
    expect(await configureScopes(prompter, presets[2], resources)).toEqual([{ resource_type: 'namespace', resource_id: 'ns_1', role: 'admin' }]);
  });
});

describe('key wizard step 3: sharing groups', () => {
  test('returns the chosen groups', async () => {
    const prompter = scripted([['grp_1']]);
    expect(await chooseGroups(prompter, [{ name: 'platform', value: 'grp_1' }])).toEqual({ ids: ['grp_1'] });
  });

  test('warns when none is chosen that only this key will reach what it creates', async () => {
    expect(await chooseGroups(scripted([[]]), [{ name: 'platform', value: 'grp_1' }])).toEqual({ ids: [], warning: NO_GROUP_WARNING });
    expect(await chooseGroups(scripted([]), [])).toEqual({ ids: [], warning: NO_GROUP_WARNING });
  });
});

describe('key wizard step 4: details and review', () => {
  test('asks only for what the flags left open', async () => {
    const prompter = scripted(['desc', '90d']);
    const details = await askDetails(prompter, { name: 'ci' });
    expect(details.name).toBe('ci');
    expect(details.description).toBe('desc');
    expect(Date.parse(details.expires_at!) - Date.now()).toBeGreaterThan(89 * 24 * 3600 * 1000);
    expect(prompter.asked.map((a) => a.message)).toEqual(['Description (optional)', 'Expires']);
  });

  test('shows the review, then asks to confirm', async () => {
    const draft: KeyDraft = { name: 'ci', description: '', expires_at: null, scopes: [{ resource_type: 'agent', resource_id: 'agt_1', role: 'viewer' }], sharing_group_ids: [] };
    const shown: KeyDraft[] = [];
    const prompter = scripted([false]);
    expect(await review(prompter, draft, async (d) => void shown.push(d))).toBe(false);
    expect(shown).toEqual([draft]);
    expect(prompter.asked).toEqual([{ kind: 'confirm', message: 'Create this key?', choices: undefined }]);
  });
});
