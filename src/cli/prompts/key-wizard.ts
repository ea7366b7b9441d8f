import { ROLES_BY_RESOURCE_TYPE, type ResourceType } from '../../contract/common.js';
import type { Preset, Scope } from '../../contract/resources.js';
import { usageError } from '../errors.js';
import type { Choice, Prompter } from './prompter.js';

/** What the current key can see, per resource type, as prompt choices (value: the resource id). */
export type ResourceChoices = Record<ResourceType, Choice<string>[]>;

export interface KeyDraft {
  name: string;
  description: string;
  /** ISO time, or null for a key that does not expire. */
  expires_at: string | null;
  scopes: Scope[];
  sharing_group_ids: string[];
}

export const NO_GROUP_WARNING = 'No sharing group chosen: only this key (and org admins) will reach the agents and projects it creates.';

export const scopeLabel = (s: Scope) => `${s.resource_type}:${s.resource_id}:${s.role}`;

const presetScopes = (preset: Preset) => (preset.scopes.length ? preset.scopes.map((s) => `${s.resource_type}:${s.role}`).join(', ') : 'no scopes');

/** Step 1: the preset, each shown with its use and its scopes. */
export async function choosePreset(prompter: Prompter, presets: Preset[]): Promise<Preset> {
  return prompter.select({
    message: 'Step 1 of 4 · Preset: what is this key for?',
    choices: presets.map((p) => ({ name: `${p.name} — ${p.use}`, value: p, description: `Scopes: ${presetScopes(p)}` })),
  });
}

/**
 * Step 2: the preset's scopes pre-filled (the resources for each picked from what the key can see),
 * then scopes added and removed until the list is right.
 */
export async function configureScopes(prompter: Prompter, preset: Preset, resources: ResourceChoices, initial: Scope[] = []): Promise<Scope[]> {
  const scopes: Scope[] = [...initial];
  const add = (scope: Scope) => {
    if (!scopes.some((s) => s.resource_type === scope.resource_type && s.resource_id === scope.resource_id)) scopes.push(scope);
    else scopes.splice(scopes.findIndex((s) => s.resource_type === scope.resource_type && s.resource_id === scope.resource_id), 1, scope);
  };
  for (const template of preset.scopes) {
    const choices = resources[template.resource_type];
    if (!choices.length) continue;
    const picked = await prompter.checkbox({
      message: `Step 2 of 4 · Scopes: which ${template.resource_type}s get ${template.role}?`,
      choices: choices.map((c) => ({ ...c, checked: false })),
    });
    for (const id of picked) add({ resource_type: template.resource_type, resource_id: id, role: template.role });
  }
  for (;;) {
    const action = await prompter.select<'done' | 'add' | 'remove'>({
      message: `Step 2 of 4 · Scopes: ${scopes.length ? scopes.map(scopeLabel).join(', ') : 'none yet'}`,
      choices: [
        { name: 'Done', value: 'done', disabled: scopes.length ? false : 'add at least one scope' },
        { name: 'Add a scope', value: 'add' },
        { name: 'Remove scopes', value: 'remove', disabled: scopes.length ? false : 'nothing to remove' },
      ],
    });
    if (action === 'done') return scopes;
    if (action === 'remove') {
      const removed = await prompter.checkbox({ message: 'Remove which scopes?', choices: scopes.map((s, i) => ({ name: scopeLabel(s), value: i })) });
      const keep = scopes.filter((_s, i) => !removed.includes(i));
      scopes.splice(0, scopes.length, ...keep);
      continue;
    }
    const types = (Object.keys(resources) as ResourceType[]).filter((t) => resources[t].length);
    const type = await prompter.select({ message: 'Resource type', choices: types.map((t) => ({ name: t, value: t })) });
    const id = await prompter.select({ message: `Which ${type}?`, choices: resources[type] });
    const role = await prompter.select({ message: 'Role', choices: ROLES_BY_RESOURCE_TYPE[type].map((r) => ({ name: r, value: r as Scope['role'] })) });
    add({ resource_type: type, resource_id: id, role });
  }
}

/** Step 3: sharing groups; choosing none earns a warning. */
export async function chooseGroups(prompter: Prompter, groups: Choice<string>[]): Promise<{ ids: string[]; warning?: string }> {
  const ids = groups.length ? await prompter.checkbox({ message: 'Step 3 of 4 · Sharing groups (their members get owner on what this key creates)', choices: groups }) : [];
  return ids.length ? { ids } : { ids, warning: NO_GROUP_WARNING };
}

/** Step 4, first half: name, description and lifetime for whatever the flags left open. */
export async function askDetails(prompter: Prompter, given: { name?: string; description?: string; expires?: string }): Promise<Pick<KeyDraft, 'name' | 'description' | 'expires_at'>> {
  const name = given.name ?? (await prompter.input({ message: 'Step 4 of 4 · Key name', required: true, validate: (v) => (v.trim() ? true : 'A name is required') })).trim();
  const description = given.description ?? (await prompter.input({ message: 'Description (optional)', default: '' }));
  const expires =
    given.expires ??
    (await prompter.select({
      message: 'Expires',
      choices: ['never', '30d', '90d', '1y'].map((v) => ({ name: v === 'never' ? 'Never' : `In ${v}`, value: v })),
      default: '90d',
    }));
  return { name, description, expires_at: parseExpires(expires) };
}

/** Step 4, second half: the review (written by `show`) and the confirmation. */
export async function review(prompter: Prompter, draft: KeyDraft, show: (draft: KeyDraft) => Promise<void>): Promise<boolean> {
  await show(draft);
  return prompter.confirm({ message: 'Create this key?', default: true });
}

/** `90d`, `12h`, `2w`, `1y`, an ISO date, or `never`/`none` -> an ISO time or null. */
export function parseExpires(value: string, now = Date.now()): string | null {
  const text = value.trim().toLowerCase();
  if (text === 'never' || text === 'none' || text === '') return null;
  const match = /^(\d+)\s*([hdwy])$/.exec(text);
  if (match) {
    const hours = { h: 1, d: 24, w: 24 * 7, y: 24 * 365 }[match[2] as 'h' | 'd' | 'w' | 'y'];
    const ms = Number(match[1]) * hours * 3600 * 1000;
    if (ms <= 0) throw usageError(`--expires ${value} is not in the future`);
    return new Date(now + ms).toISOString();
  }
  const date = Date.parse(value);
  if (Number.isNaN(date)) throw usageError(`--expires ${value} is not a duration (90d, 12h, 2w, 1y), a date, or never`);
  if (date <= now) throw usageError(`--expires ${value} is in the past`);
  return new Date(date).toISOString();
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
