import { ROLES_BY_RESOURCE_TYPE } from '../../contract/enums.js';
import type { ResourceType } from '../../contract/common.js';
import type { Preset, Scope } from '../../contract/resources.js';
import { usageError } from '../errors.js';
import { DEFAULT_KEY_EXPIRY, parseExpires } from '../key-expiry.js';
import type { Choice, Prompter } from './prompter.js';

/** What the current key can see, per resource type, as prompt choices (value: the resource id; label: as `--scope` names it). */
export type ResourceChoices = Record<ResourceType, (Choice<string> & { label: string })[]>;

export interface KeyDraft {
  name: string;
  description: string;
  /** ISO time, or null for a key that does not expire. */
  expires_at: string | null;
  scopes: Scope[];
  sharing_group_ids: string[];
}

/** Step 4's answers; `expires` is what was chosen (90d, never, ...), the default when going back. */
export type KeyDetails = Pick<KeyDraft, 'name' | 'description' | 'expires_at'> & { expires: string };

export const NO_GROUP_WARNING = 'No sharing group chosen: only this key (and org admins) will reach the agents and projects it creates.';

/**
 * Whether a key with these scopes can create agents or projects, the resources whose ownership its
 * sharing groups share (README "Access control": org admins, and namespace admins deploy new agents
 * and create projects). Without it, the no-group warning has nothing to warn about.
 */
export const createsResources = (scopes: readonly Pick<Scope, 'resource_type' | 'role'>[]) =>
  scopes.some((s) => s.role === 'admin' && (s.resource_type === 'org' || s.resource_type === 'namespace'));

/** The no-group warning, for a key that creates resources and joins no group; undefined otherwise. */
export const noGroupWarning = (scopes: readonly Pick<Scope, 'resource_type' | 'role'>[], groupIds: readonly string[]) =>
  !groupIds.length && createsResources(scopes) ? NO_GROUP_WARNING : undefined;

/** The answer of a step that asks to go back to the one before it. */
export const BACK = Symbol('back');

/** A scope as `--scope` takes it (`agent:default/bot:viewer`), by the name the pick lists show; an id only for what they do not. */
export const scopeLabel = (s: Scope, resources?: ResourceChoices) =>
  `${s.resource_type}:${resources?.[s.resource_type].find((c) => c.value === s.resource_id)?.label ?? s.resource_id}:${s.role}`;

const presetScopes = (preset: Preset) => (preset.scopes.length ? preset.scopes.map((s) => `${s.resource_type}:${s.role}`).join(', ') : 'no scopes');

const STEP_NAMES = { 1: 'preset', 2: 'scopes', 3: 'sharing groups', 4: 'name, description and expiry' } as const;
type Step = keyof typeof STEP_NAMES;

/** Step 1: the preset, each shown with its use, its scopes and what they allow. */
export async function choosePreset(prompter: Prompter, presets: Preset[], current?: Preset): Promise<Preset> {
  return prompter.select({
    message: 'Step 1 of 4 · Preset: what is this key for?',
    choices: presets.map((p) => ({ name: `${p.name} — ${p.use}`, value: p, description: `Scopes: ${presetScopes(p)}. ${p.description}` })),
    default: current,
  });
}

/**
 * Step 2: the preset's scopes pre-filled (the resources for each picked from what the key can see;
 * a type with nothing visible is skipped, saying so), then scopes added and removed until the list
 * is right. A scope added by hand starts on the preset's role for its type. With `canGoBack`, the
 * menu also offers step 1 again (answered as BACK).
 */
export async function configureScopes(
  prompter: Prompter,
  preset: Preset,
  resources: ResourceChoices,
  initial: Scope[] = [],
  options: { prefill?: boolean; canGoBack?: boolean } = {},
): Promise<Scope[] | typeof BACK> {
  const scopes: Scope[] = [...initial];
  const add = (scope: Scope) => {
    if (!scopes.some((s) => s.resource_type === scope.resource_type && s.resource_id === scope.resource_id)) scopes.push(scope);
    else
      scopes.splice(
        scopes.findIndex((s) => s.resource_type === scope.resource_type && s.resource_id === scope.resource_id),
        1,
        scope,
      );
  };
  for (const template of options.prefill === false ? [] : preset.scopes) {
    const choices = resources[template.resource_type];
    if (!choices.length) {
      prompter.note(
        `Step 2 of 4 · Scopes: no ${template.resource_type} is visible to this key, so the preset's ${template.resource_type}:${template.role} is left out`,
      );
      continue;
    }
    const picked = await prompter.checkbox({
      message: `Step 2 of 4 · Scopes: which ${template.resource_type}s get ${template.role}?`,
      choices: choices.map((c) => ({ ...c, checked: false })),
    });
    for (const id of picked) add({ resource_type: template.resource_type, resource_id: id, role: template.role });
  }
  for (;;) {
    const action = await prompter.select<'done' | 'add' | 'remove' | typeof BACK>({
      message: `Step 2 of 4 · Scopes: ${scopes.length ? scopes.map((s) => scopeLabel(s, resources)).join(', ') : 'none yet'}`,
      choices: [
        { name: 'Done', value: 'done', disabled: scopes.length ? false : 'add at least one scope' },
        { name: 'Add a scope', value: 'add' },
        { name: 'Remove scopes', value: 'remove', disabled: scopes.length ? false : 'nothing to remove' },
        ...(options.canGoBack ? [{ name: `Back to step 1 (${STEP_NAMES[1]})`, value: BACK } as const] : []),
      ],
    });
    if (action === 'done' || action === BACK) return action === BACK ? BACK : scopes;
    if (action === 'remove') {
      const removed = await prompter.checkbox({
        message: 'Remove which scopes?',
        choices: scopes.map((s, i) => ({ name: scopeLabel(s, resources), value: i })),
      });
      const keep = scopes.filter((_s, i) => !removed.includes(i));
      scopes.splice(0, scopes.length, ...keep);
      continue;
    }
    const types = (Object.keys(resources) as ResourceType[]).filter((t) => resources[t].length);
    const type = await prompter.select({ message: 'Resource type', choices: types.map((t) => ({ name: t, value: t })) });
    const id = await prompter.select({ message: `Which ${type}?`, choices: resources[type] });
    const presetRole = preset.scopes.find((s) => s.resource_type === type)?.role;
    const role = await prompter.select({
      message: presetRole ? `Role (${preset.name} gives ${type}s ${presetRole})` : 'Role',
      choices: ROLES_BY_RESOURCE_TYPE[type].map((r) => ({ name: r, value: r as Scope['role'] })),
      default: presetRole,
    });
    add({ resource_type: type, resource_id: id, role });
  }
}

/** Step 3: sharing groups (those in `current` checked); with none in the org, skipped, saying so. */
export async function chooseGroups(prompter: Prompter, groups: Choice<string>[], current: string[] = []): Promise<{ ids: string[]; warning?: string }> {
  if (!groups.length) prompter.note('Step 3 of 4 · Sharing groups: skipped, the org has none yet (agentctl groups create NAME makes one)');
  const ids = groups.length
    ? await prompter.checkbox({
        message: 'Step 3 of 4 · Sharing groups (their members get owner on what this key creates)',
        choices: groups.map((g) => ({ ...g, checked: current.includes(g.value) })),
      })
    : [];
  return ids.length ? { ids } : { ids, warning: NO_GROUP_WARNING };
}

const EXPIRY_CHOICES = ['30d', '90d', '1y', 'never'];

/** Step 4, first half: name, description and lifetime for whatever the flags left open (`current`: the answers to go back to). */
export async function askDetails(
  prompter: Prompter,
  given: { name?: string; description?: string; expires?: string },
  current?: KeyDetails,
): Promise<KeyDetails> {
  const name =
    given.name ??
    (
      await prompter.input({
        message: 'Step 4 of 4 · Key name',
        required: true,
        default: current?.name,
        validate: (v) => (v.trim() ? true : 'A name is required'),
      })
    ).trim();
  const description = given.description ?? (await prompter.input({ message: 'Description (optional)', default: current?.description ?? '' }));
  const expires =
    given.expires ??
    (await prompter.select({
      message: 'Expires',
      choices: EXPIRY_CHOICES.map((v) => ({ name: v === 'never' ? 'Never' : `In ${v}${v === DEFAULT_KEY_EXPIRY ? ' (the default)' : ''}`, value: v })),
      default: current?.expires ?? DEFAULT_KEY_EXPIRY,
    }));
  return { name, description, expires, expires_at: parseExpires(expires) };
}

/**
 * Step 4, second half: the review (written by `show`), then create, go back to one of the steps in
 * `backTo` (those that asked something), or cancel.
 */
export async function review(
  prompter: Prompter,
  draft: KeyDraft,
  show: (draft: KeyDraft) => Promise<void>,
  backTo: Step[] = [],
): Promise<'create' | 'cancel' | Step> {
  await show(draft);
  return prompter.select<'create' | 'cancel' | Step>({
    message: 'Create this key?',
    choices: [
      { name: 'Yes, create it', value: 'create' },
      ...[...backTo].sort((a, b) => b - a).map((step) => ({ name: `Back to step ${step} (${STEP_NAMES[step]})`, value: step })),
      { name: 'No, cancel', value: 'cancel' },
    ],
    default: 'create',
  });
}

/** What the flags already settle, and how to fetch what the wizard offers. */
export interface WizardSetup {
  presets: Preset[];
  /** --preset. */
  preset?: Preset;
  /** --scope flags, resolved: steps 1 and 2 are then skipped. */
  scopes?: Scope[];
  /** --group flags, resolved: step 3 is then skipped. */
  groupIds?: string[];
  given: { name?: string; description?: string; expires?: string };
  resources: () => Promise<ResourceChoices>;
  groups: () => Promise<Choice<string>[]>;
  show: (draft: KeyDraft) => Promise<void>;
  warn: (message: string) => void;
  /** --yes: no review question. */
  skipReview?: boolean;
}

/**
 * The four steps in order, each skipped with a note when a flag settles it, and each reachable
 * again from the review (step 1 also from step 2's menu). Null when the user cancels.
 */
export async function keyWizard(prompter: Prompter, setup: WizardSetup): Promise<KeyDraft | null> {
  let step: Step | 5 = 1;
  let preset = setup.preset;
  let scopes = setup.scopes ?? [];
  let groupIds = setup.groupIds ?? [];
  let details: KeyDetails | undefined;
  let prefill = true;
  let resources: ResourceChoices | undefined;
  let groups: Choice<string>[] | undefined;
  const asked = new Set<Step>();
  for (;;) {
    if (step === 1) {
      if (setup.scopes?.length) prompter.note('Step 1 of 4 · Preset: skipped, the scopes come from --scope');
      else if (setup.preset) prompter.note(`Step 1 of 4 · Preset: ${setup.preset.name}, from --preset`);
      else {
        preset = await choosePreset(prompter, setup.presets, preset);
        asked.add(1);
        prefill = true;
        scopes = [];
      }
      step = 2;
    } else if (step === 2) {
      if (setup.scopes?.length) {
        resources ??= await setup.resources();
        prompter.note(`Step 2 of 4 · Scopes: skipped, from --scope: ${scopes.map((s) => scopeLabel(s, resources)).join(', ')}`);
        step = 3;
        continue;
      }
      resources ??= await setup.resources();
      const result = await configureScopes(prompter, preset!, resources, scopes, { prefill, canGoBack: asked.has(1) });
      prefill = false;
      if (result === BACK) step = 1;
      else {
        scopes = result;
        asked.add(2);
        step = 3;
      }
    } else if (step === 3) {
      if (setup.groupIds) prompter.note('Step 3 of 4 · Sharing groups: skipped, from --group');
      else {
        groups ??= await setup.groups();
        groupIds = (await chooseGroups(prompter, groups, groupIds)).ids;
        if (groups.length) asked.add(3);
      }
      step = 4;
    } else if (step === 4) {
      details = await askDetails(prompter, setup.given, details);
      if (setup.given.name === undefined || setup.given.description === undefined || setup.given.expires === undefined) asked.add(4);
      step = 5;
    } else {
      const draft: KeyDraft = { name: details!.name, description: details!.description, expires_at: details!.expires_at, scopes, sharing_group_ids: groupIds };
      const warning = noGroupWarning(scopes, groupIds);
      if (warning) setup.warn(warning);
      if (setup.skipReview) return draft;
      const answer = await review(prompter, draft, setup.show, [...asked]);
      if (answer === 'create') return draft;
      if (answer === 'cancel') return null;
      step = answer;
    }
  }
}

export interface ScopeFlag {
  resource_type: ResourceType;
  /** An id, or a name the caller resolves (namespace slug, agent ns/name). */
  resource: string;
  role: Scope['role'];
}

/** `type:id:role`, or `type:id` taking the preset's role for that type. */
export function parseScopeFlag(value: string, preset: Preset | undefined): ScopeFlag {
  const parts = value.split(':');
  const type = parts[0] as ResourceType;
  if (!(type in ROLES_BY_RESOURCE_TYPE) || parts.length < 2 || parts.length > 3 || !parts[1]) {
    throw usageError(`--scope ${value} is not type:id:role`, 'type is org, namespace, project or agent, e.g. --scope agent:default/bot:editor.');
  }
  let role: string | undefined = parts[2];
  if (!role) {
    role = preset?.scopes.find((s) => s.resource_type === type)?.role;
    if (!role) {
      throw usageError(
        `--scope ${value} has no role${preset ? ` and the ${preset.name} preset has none for ${type}` : ''}`,
        `Add one: --scope ${value}:${ROLES_BY_RESOURCE_TYPE[type][0]} (roles for ${type}: ${ROLES_BY_RESOURCE_TYPE[type].join(', ')}), or pass --preset.`,
      );
    }
  }
  if (!ROLES_BY_RESOURCE_TYPE[type].includes(role)) {
    throw usageError(`--scope ${value}: ${role} is not a role for ${type}`, `Roles for ${type}: ${ROLES_BY_RESOURCE_TYPE[type].join(', ')}.`);
  }
  return { resource_type: type, resource: parts[1], role: role as Scope['role'] };
}
