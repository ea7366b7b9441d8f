import { describe, expect, test } from 'vitest';
import { PRESETS } from '../../src/contract/presets.js';
import type { Preset } from '../../src/contract/resources.js';
import {
  askDetails,
  BACK,
  chooseGroups,
  choosePreset,
  configureScopes,
  keyWizard,
  NO_GROUP_WARNING,
  noGroupWarning,
  review,
  type KeyDraft,
  type ResourceChoices,
  type WizardSetup,
} from '../../src/cli/prompts/key-wizard.js';
import type { Choice, Prompter } from '../../src/cli/prompts/prompter.js';

type Asked = { kind: string; message: string; choices?: Choice<unknown>[]; default?: unknown };

/** Answers prompts from a script, in order, and records what was asked (and every note, as kind 'note'). */
function scripted(answers: unknown[]): Prompter & { asked: Asked[] } {
  const asked: Asked[] = [];
  const next = (kind: string, message: string, choices?: Choice<unknown>[], fallback?: unknown) => {
    asked.push({ kind, message, choices, ...(fallback !== undefined ? { default: fallback } : {}) });
    if (!answers.length) throw new Error(`unexpected prompt: ${message}`);
    const answer = answers.shift();
    return Promise.resolve(typeof answer === 'function' ? answer(choices) : answer);
  };
  return {
    asked,
    select: (o) => next('select', o.message, o.choices as Choice<unknown>[], o.default) as never,
    checkbox: (o) => next('checkbox', o.message, o.choices as Choice<unknown>[]) as never,
    input: (o) => next('input', o.message, undefined, o.default) as never,
    password: (o) => next('password', o.message) as never,
    confirm: (o) => next('confirm', o.message) as never,
    note: (message) => void asked.push({ kind: 'note', message }),
  };
}

const preset = (id: Preset['id']) => PRESETS.find((p) => p.id === id)!;
const presets: Preset[] = [preset('deploy'), preset('read-only'), preset('custom')];

const resources: ResourceChoices = {
  org: [{ name: 'this org', value: 'org_1', label: 'current' }],
  namespace: [{ name: 'default (ns_1)', value: 'ns_1', label: 'default' }],
  agent: [
    { name: 'default/bot (agt_1)', value: 'agt_1', label: 'default/bot' },
    { name: 'default/helper (agt_2)', value: 'agt_2', label: 'default/helper' },
  ],
  project: [],
};

describe('key wizard step 1: preset', () => {
  test('offers every preset with its use, scopes and what they allow, and returns the chosen one', async () => {
    const prompter = scripted([presets[1]]);
    expect(await choosePreset(prompter, presets)).toBe(presets[1]);
    expect(prompter.asked[0].choices!.map((c) => [c.name, c.description])).toEqual([
      ['Deploy — CI/CD and deployments', `Scopes: namespace:admin, agent:editor, project:editor. ${presets[0].description}`],
      [
        'Read-Only — Monitoring, dashboards',
        'Scopes: agent:viewer, project:viewer. Viewers read agents and projects, and agent viewers can also run tasks (create tasks, send events), as the role table grants.',
      ],
      ['Custom — Manual scope configuration', 'Scopes: no scopes. No scopes filled in: add each one yourself.'],
    ]);
  });
});

describe('key wizard step 2: scopes', () => {
  test('pre-fills the preset’s roles on the picked resources; a type with nothing visible is skipped, saying why', async () => {
    const prompter = scripted([['ns_1'], ['agt_2'], 'done']);
    const scopes = await configureScopes(prompter, presets[0], resources);
    expect(scopes).toEqual([
      { resource_type: 'namespace', resource_id: 'ns_1', role: 'admin' },
      { resource_type: 'agent', resource_id: 'agt_2', role: 'editor' },
    ]);
    expect(prompter.asked.map((a) => `${a.kind}: ${a.message}`)).toEqual([
      'checkbox: Step 2 of 4 · Scopes: which namespaces get admin?',
      'checkbox: Step 2 of 4 · Scopes: which agents get editor?',
      "note: Step 2 of 4 · Scopes: no project is visible to this key, so the preset's project:editor is left out",
      'select: Step 2 of 4 · Scopes: namespace:default:admin, agent:default/helper:editor',
    ]);
  });

  test('adds a scope by type, resource and role (the preset’s role for that type first), and removes scopes', async () => {
    const prompter = scripted([[], 'add', 'agent', 'agt_1', 'owner', 'add', 'org', 'org_1', 'member', 'remove', [1], 'done']);
    const scopes = await configureScopes(prompter, presets[1], resources);
    expect(scopes).toEqual([{ resource_type: 'agent', resource_id: 'agt_1', role: 'owner' }]);
    const roleQuestions = prompter.asked.filter((a) => a.message.startsWith('Role'));
    expect(roleQuestions.map((a) => [a.message, a.default])).toEqual([
      ['Role (Read-Only gives agents viewer)', 'viewer'],
      ['Role', undefined],
    ]);
    expect(roleQuestions[0].choices!.map((c) => c.value)).toEqual(['discoverer', 'viewer', 'editor', 'owner', 'executor']);
  });

  test('Done is disabled while there is no scope', async () => {
    const prompter = scripted([
      (choices: Choice<string>[]) => (choices.find((c) => c.value === 'done')!.disabled ? 'add' : 'done'),
      'namespace',
      'ns_1',
      'admin',
      'done',
    ]);
    expect(await configureScopes(prompter, presets[2], resources)).toEqual([{ resource_type: 'namespace', resource_id: 'ns_1', role: 'admin' }]);
  });

  test('offers going back to step 1 only when asked to', async () => {
    const back = scripted([BACK]);
    expect(await configureScopes(back, presets[2], resources, [], { canGoBack: true })).toBe(BACK);
    expect(back.asked[0].choices!.map((c) => c.name)).toEqual(['Done', 'Add a scope', 'Remove scopes', 'Back to step 1 (preset)']);
    const noBack = scripted(['add', 'namespace', 'ns_1', 'admin', 'done']);
    await configureScopes(noBack, presets[2], resources);
    expect(noBack.asked[0].choices!.map((c) => c.name)).toEqual(['Done', 'Add a scope', 'Remove scopes']);
  });
});

describe('key wizard step 3: sharing groups', () => {
  test('returns the chosen groups; members are counted in the right number', async () => {
    const prompter = scripted([['grp_1']]);
    expect(await chooseGroups(prompter, [{ name: 'platform', value: 'grp_1' }])).toEqual({ ids: ['grp_1'] });
  });

  test('warns when none is chosen; with no group in the org, says why the step is skipped', async () => {
    expect(await chooseGroups(scripted([[]]), [{ name: 'platform', value: 'grp_1' }])).toEqual({ ids: [], warning: NO_GROUP_WARNING });
    const none = scripted([]);
    expect(await chooseGroups(none, [])).toEqual({ ids: [], warning: NO_GROUP_WARNING });
    expect(none.asked).toEqual([
      { kind: 'note', message: 'Step 3 of 4 · Sharing groups: skipped, the org has none yet (agentctl groups create NAME makes one)' },
    ]);
  });
});

describe('the no-group warning', () => {
  test('warns a key that can create agents or projects (org or namespace admin) and joins no group', () => {
    expect(noGroupWarning([{ resource_type: 'namespace', role: 'admin' }], [])).toBe(NO_GROUP_WARNING);
    expect(noGroupWarning([{ resource_type: 'org', role: 'admin' }], [])).toBe(NO_GROUP_WARNING);
  });

  test('says nothing to a key that creates nothing (Read-Only, Agent Runner), or that joins a group', () => {
    expect(
      noGroupWarning(
        [
          { resource_type: 'agent', role: 'viewer' },
          { resource_type: 'project', role: 'editor' },
        ],
        [],
      ),
    ).toBeUndefined();
    expect(noGroupWarning([{ resource_type: 'org', role: 'member' }], [])).toBeUndefined();
    expect(noGroupWarning([{ resource_type: 'namespace', role: 'admin' }], ['grp_1'])).toBeUndefined();
  });
});

describe('key wizard step 4: details and review', () => {
  test('asks only for what the flags left open; expiry defaults to 90 days', async () => {
    const prompter = scripted(['desc', '90d']);
    const details = await askDetails(prompter, { name: 'ci' });
    expect(details.name).toBe('ci');
    expect(details.description).toBe('desc');
    expect(Date.parse(details.expires_at!) - Date.now()).toBeGreaterThan(89 * 24 * 3600 * 1000);
    expect(prompter.asked.map((a) => [a.message, a.default])).toEqual([
      ['Description (optional)', ''],
      ['Expires', '90d'],
    ]);
    expect(prompter.asked[1].choices!.map((c) => c.name)).toEqual(['In 30d', 'In 90d (the default)', 'In 1y', 'Never']);
  });

  test('shows the review, then offers create, the steps to go back to, and cancel', async () => {
    const draft: KeyDraft = {
      name: 'ci',
      description: '',
      expires_at: null,
      scopes: [{ resource_type: 'agent', resource_id: 'agt_1', role: 'viewer' }],
      sharing_group_ids: [],
    };
    const shown: KeyDraft[] = [];
    const prompter = scripted(['cancel']);
    expect(await review(prompter, draft, async (d) => void shown.push(d), [1, 2, 4])).toBe('cancel');
    expect(shown).toEqual([draft]);
    expect(prompter.asked[0].message).toBe('Create this key?');
    expect(prompter.asked[0].choices!.map((c) => c.name)).toEqual([
      'Yes, create it',
      'Back to step 4 (name, description and expiry)',
      'Back to step 2 (scopes)',
      'Back to step 1 (preset)',
      'No, cancel',
    ]);
  });
});

describe('the whole wizard', () => {
  const setup = (extra: Partial<WizardSetup> = {}): WizardSetup & { warnings: string[]; shown: KeyDraft[] } => {
    const warnings: string[] = [];
    const shown: KeyDraft[] = [];
    return {
      presets,
      given: {},
      resources: async () => resources,
      groups: async () => [{ name: 'platform (1 member)', value: 'grp_1' }],
      show: async (d) => void shown.push(d),
      warn: (m) => void warnings.push(m),
      warnings,
      shown,
      ...extra,
    };
  };

  test('goes back from the review to step 3 and to step 1, keeping the answers as defaults', async () => {
    const prompter = scripted([
      presets[1], // step 1: Read-Only
      ['agt_1'], // step 2: agents get viewer
      'done',
      [], // step 3: no group
      'reader', // step 4
      '',
      '30d',
      3, // review: back to step 3
      ['grp_1'],
      'reader',
      '',
      '30d',
      1, // review: back to step 1
      presets[2], // Custom
      'add', // step 2 starts afresh
      'namespace',
      'ns_1',
      'admin',
      'done',
      ['grp_1'],
      'reader',
      '',
      '30d',
      'create',
    ]);
    const s = setup();
    const draft = await keyWizard(prompter, s);
    expect(draft).toMatchObject({
      name: 'reader',
      description: '',
      scopes: [{ resource_type: 'namespace', resource_id: 'ns_1', role: 'admin' }],
      sharing_group_ids: ['grp_1'],
    });
    // The first review had a Read-Only key with no group: it creates nothing, so nothing to warn about.
    expect(s.warnings).toEqual([]);
    expect(s.shown.map((d) => d.sharing_group_ids)).toEqual([[], ['grp_1'], ['grp_1']]);
    // Going back, the earlier answers are the defaults.
    const groupQuestions = prompter.asked.filter((a) => a.kind === 'checkbox' && a.message.startsWith('Step 3'));
    expect(groupQuestions.map((a) => a.choices!.map((c) => c.checked))).toEqual([[false], [false], [true]]);
    const nameQuestions = prompter.asked.filter((a) => a.message === 'Step 4 of 4 · Key name');
    expect(nameQuestions.map((a) => a.default)).toEqual([undefined, 'reader', 'reader']);
    const presetQuestions = prompter.asked.filter((a) => a.message.startsWith('Step 1'));
    expect(presetQuestions.map((a) => a.default)).toEqual([undefined, presets[1]]);
  });

  test('steps settled by flags are skipped, each saying why, and are not offered to go back to', async () => {
    const prompter = scripted(['desc', '90d', 'create']);
    const draft = await keyWizard(
      prompter,
      setup({ scopes: [{ resource_type: 'agent', resource_id: 'agt_1', role: 'viewer' }], groupIds: [], given: { name: 'ci' } }),
    );
    expect(draft).toMatchObject({ name: 'ci', description: 'desc', sharing_group_ids: [] });
    expect(prompter.asked.filter((a) => a.kind === 'note').map((a) => a.message)).toEqual([
      'Step 1 of 4 · Preset: skipped, the scopes come from --scope',
      'Step 2 of 4 · Scopes: skipped, from --scope: agent:default/bot:viewer',
      'Step 3 of 4 · Sharing groups: skipped, from --group',
    ]);
    expect(prompter.asked.at(-1)!.choices!.map((c) => c.name)).toEqual(['Yes, create it', 'Back to step 4 (name, description and expiry)', 'No, cancel']);
  });

  test('cancel at the review creates nothing', async () => {
    const prompter = scripted([presets[2], 'add', 'org', 'org_1', 'admin', 'done', [], 'x', '', 'never', 'cancel']);
    expect(await keyWizard(prompter, setup())).toBeNull();
  });
});
