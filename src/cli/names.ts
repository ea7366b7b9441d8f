import type { Scope } from '../contract/resources.js';
import type { CommandContext } from './context.js';
import { versionLabel } from '../contract/version-ref.js';

/** The kinds of id a view may show by name. */
export type NameKind = 'namespaces' | 'agents' | 'projects' | 'groups';

/** Names for ids; an id it does not know (not visible, or past the first 1000) stays an id. */
export interface NameBook {
  /** A namespace's slug. */
  namespace(id: string): string;
  /** An agent as `namespace/name`. */
  agent(id: string): string;
  /** A project as `namespace/name`. */
  project(id: string): string;
  group(id: string): string;
  /** The resource a scope names, as `--scope` takes it: a slug, `ns/name`, or `current` for the org. */
  resource(scope: Pick<Scope, 'resource_type' | 'resource_id'>): string;
  /** A scope as `--scope` takes it: `agent:default/bot:viewer`, `org:current:admin`. */
  scope(scope: Scope): string;
}

/** The most rows one list request answers: names beyond it show as ids. */
export const LIST_MAX = 1000;

/**
 * Names for the ids a view shows (namespace slugs, agents and projects as `ns/name`, sharing
 * groups), one list request per kind asked for. Tables and records show names and `--wide` adds the
 * ids; `--json` prints the server's ids, so it asks for nothing.
 */
export async function nameBook(ctx: CommandContext, kinds: readonly NameKind[]): Promise<NameBook> {
  const maps = {
    namespaces: new Map<string, string>(),
    agents: new Map<string, string>(),
    projects: new Map<string, string>(),
    groups: new Map<string, string>(),
  };
  if (!ctx.globals.json && kinds.length > 0) {
    const client = await ctx.client();
    const want = new Set<NameKind>(kinds);
    // Agents and projects are named within their namespace.
    if (want.has('agents') || want.has('projects')) want.add('namespaces');
    const [namespaces, agents, projects, groups] = await Promise.all([
      want.has('namespaces') ? client.listNamespaces({ query: { limit: LIST_MAX } }).then((r) => r.namespaces) : [],
      want.has('agents') ? client.listAgents({ query: { limit: LIST_MAX } }).then((r) => r.agents) : [],
      want.has('projects') ? client.listProjects({ query: { limit: LIST_MAX } }).then((r) => r.projects) : [],
      want.has('groups') ? client.listGroups({ query: { limit: LIST_MAX } }).then((r) => r.groups) : [],
    ]);
    for (const n of namespaces) maps.namespaces.set(n.id, n.slug);
    const inNamespace = (namespaceId: string, name: string) => `${maps.namespaces.get(namespaceId) ?? namespaceId}/${name}`;
    for (const a of agents) maps.agents.set(a.id, inNamespace(a.namespace_id, a.name));
    for (const p of projects) maps.projects.set(p.id, inNamespace(p.namespace_id, p.name));
    for (const g of groups) maps.groups.set(g.id, g.name);
  }
  const lookup = (map: Map<string, string>) => (id: string) => map.get(id) ?? id;
  const book: NameBook = {
    namespace: lookup(maps.namespaces),
    agent: lookup(maps.agents),
    project: lookup(maps.projects),
    group: lookup(maps.groups),
    resource: (s) =>
      s.resource_type === 'org'
        ? 'current'
        : s.resource_type === 'namespace'
          ? book.namespace(s.resource_id)
          : s.resource_type === 'agent'
            ? book.agent(s.resource_id)
            : book.project(s.resource_id),
    scope: (s) => `${s.resource_type}:${book.resource(s)}:${s.role}`,
  };
  return book;
}

/** What a view shows for an id when it has no book (under `--json`, or before names are fetched). */
export const idsOnly: NameBook = {
  namespace: (id) => id,
  agent: (id) => id,
  project: (id) => id,
  group: (id) => id,
  resource: (s) => s.resource_id,
  scope: (s) => `${s.resource_type}:${s.resource_id}:${s.role}`,
};

/** The kinds of name the scopes of these keys need. */
export function kindsOfScopes(keys: readonly { scopes: readonly Scope[] }[]): NameKind[] {
  const kinds = new Set<NameKind>();
  for (const key of keys) {
    for (const s of key.scopes) {
      if (s.resource_type === 'namespace') kinds.add('namespaces');
      else if (s.resource_type === 'agent') kinds.add('agents');
      else if (s.resource_type === 'project') kinds.add('projects');
    }
  }
  return [...kinds];
}

/** `vN` for each version id (one request per distinct version, a few at a time); nothing under `--json`, which prints ids. */
export async function versionLabels(ctx: CommandContext, ids: Iterable<string | null | undefined>): Promise<Map<string, string>> {
  const labels = new Map<string, string>();
  if (ctx.globals.json) return labels;
  const client = await ctx.client();
  const distinct = [...new Set([...ids].filter((id): id is string => Boolean(id)))];
  for (let i = 0; i < distinct.length; i += 16) {
    const versions = await Promise.all(distinct.slice(i, i + 16).map((version_id) => client.getVersion({ params: { version_id } }).catch(() => undefined)));
    for (const v of versions) if (v) labels.set(v.id, versionLabel(v.number));
  }
  return labels;
}
