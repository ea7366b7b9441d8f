import type { Client } from '../../../client/index.js';
import type { Preset, Scope } from '../../../contract/resources.js';
import { defineCommand } from '../../command.js';
import type { CommandContext } from '../../context.js';
import { CliError, declined, needsFlag } from '../../errors.js';
import { ExitCode } from '../../exit-codes.js';
import { renderView } from '../../output/render.js';
import { record, table, text } from '../../output/view.js';
import { DEFAULT_KEY_EXPIRY, describeExpiry, parseExpires } from '../../key-expiry.js';
import { plural } from '../../../contract/plural.js';
import { keyWizard, noGroupWarning, parseScopeFlag, type KeyDraft, type ResourceChoices } from '../../prompts/key-wizard.js';
import { parseAgentPath } from '../../refs.js';
import { resolveGroupIds } from '../groups/shared.js';
import { kindsOfScopes, LIST_MAX, nameBook } from '../../names.js';
import { PRESET_IDS } from '../../../contract/enums.js';

export default defineCommand({
  path: ['keys', 'create'],
  summary: 'Create an API key: a four-step wizard on a terminal, or flags',
  description:
    'Steps: preset, scopes, sharing groups, review. Every step has a flag, so CI never prompts. --scope is type:id:role (type namespace, agent, project or org; an agent may be namespace/name, a namespace its slug); with --preset, type:id takes the preset’s role for that type. The secret is printed once, on stdout.',
  options: [
    { flags: '--preset <preset>', description: 'Scope preset', choices: PRESET_IDS },
    { flags: '--scope <type:id[:role]>', description: 'A scope; repeat for more', repeatable: true, field: 'scopes' },
    { flags: '--group <id>', description: 'Sharing group (grp_ id or name); repeat for more', repeatable: true, field: 'sharing_group_ids' },
    { flags: '--name <name>', description: 'Key name' },
    { flags: '--description <text>', description: 'Description' },
    {
      flags: '--expires <when>',
      description: `Lifetime (90d, 12h, 2w, 1y), an ISO date, or never (default ${DEFAULT_KEY_EXPIRY}, as in the wizard)`,
      field: 'expires_at',
    },
  ],
  examples: [
    'agentctl keys create',
    'agentctl keys create --preset deploy --scope namespace:default --scope agent:default/bot --name ci-deploy --expires 90d',
    'agentctl keys create --name reader --scope agent:agt_01J...:viewer --group grp_01J... --json',
  ],
  handler: async (ctx, _args, options) => {
    const client = await ctx.client();
    const scopeFlags: string[] = options.scope ?? [];
    const groupFlags: string[] | undefined = options.group;
    const wizard = ctx.canPrompt() && (!options.name || scopeFlags.length === 0);
    if (!wizard) {
      if (scopeFlags.length === 0)
        throw needsFlag(
          '--scope',
          options.preset ? `The ${options.preset} preset gives roles, not resources: name each resource` : 'A key needs at least one scope',
          'agentctl keys create --preset deploy --scope namespace:default --name ci',
        );
      if (!options.name) throw needsFlag('--name', 'A key needs a name');
    }

    const presets = options.preset || wizard ? (await client.listPresets()).presets : [];
    const preset: Preset | undefined = options.preset ? presets.find((p) => p.id === options.preset) : undefined;
    const scopes = await Promise.all(scopeFlags.map((flag) => resolveScope(client, flag, preset)));
    const groupIds = groupFlags ? await resolveGroupIds(client, groupFlags, '--group') : [];

    let draft: KeyDraft | null;
    if (wizard) {
      draft = await keyWizard(await ctx.prompts(), {
        presets,
        preset,
        scopes: scopes.length ? scopes : undefined,
        groupIds: groupFlags ? groupIds : undefined,
        given: { name: options.name, description: options.description, expires: options.expires },
        resources: () => visibleResources(client),
        groups: async () =>
          (await client.listGroups({ query: { limit: LIST_MAX } })).groups.map((g) => ({
            name: `${g.name} (${plural(g.member_count, 'member')})`,
            value: g.id,
            description: g.description,
          })),
        show: (d) => showReview(ctx, d),
        warn: (message) => ctx.warn(message),
        skipReview: ctx.globals.yes,
      });
      if (!draft) throw declined('Cancelled: no key was created.');
    } else {
      // --name was required above when there is no wizard.
      draft = {
        name: options.name!,
        description: options.description ?? '',
        expires_at: parseExpires(options.expires ?? DEFAULT_KEY_EXPIRY),
        scopes,
        sharing_group_ids: groupIds,
      };
      const warning = noGroupWarning(scopes, groupIds);
      if (warning) ctx.warn(warning);
    }

    const { data, raw } = await ctx.call('createKey', { body: draft });
    const expiry = data.api_key.expires_at === null ? 'never expires' : `expires ${describeExpiry(data.api_key.expires_at)}`;
    ctx.success(`Created key ${data.api_key.name} (${data.api_key.id}); it ${expiry}`);
    ctx.warn('The secret is printed once, on stdout: store it now (e.g. agentctl auth login --with-token --profile <name>); it cannot be shown again.');
    return { json: raw, view: text(data.secret) };
  },
});

/** Resolves the resource of a `--scope` flag: namespace slugs and agent ns/name become ids. */
async function resolveScope(client: Client, flag: string, preset: Preset | undefined): Promise<Scope> {
  const parsed = parseScopeFlag(flag, preset);
  let id = parsed.resource;
  if (parsed.resource_type === 'namespace' && !id.startsWith('ns_')) {
    const { namespaces } = await client.listNamespaces({ query: { limit: 1000 } });
    const found = namespaces.find((n) => n.slug === id);
    if (!found)
      throw new CliError(`--scope ${flag}: no namespace "${id}" is visible to this key`, {
        exitCode: ExitCode.notFound,
        code: 'not_found',
        next: 'agentctl namespaces list',
      });
    id = found.id;
  } else if (parsed.resource_type === 'agent' && !id.startsWith('agt_')) {
    id = (await client.getAgentByName({ params: parseAgentPath(id) })).id;
  } else if (parsed.resource_type === 'org' && id === 'current') {
    id = (await client.whoami()).org_id;
  }
  return { resource_type: parsed.resource_type, resource_id: id, role: parsed.role };
}

/** What the current key can see, for the wizard's pick lists. */
async function visibleResources(client: Client): Promise<ResourceChoices> {
  const [whoami, { namespaces }, { agents }, { projects }] = await Promise.all([
    client.whoami(),
    client.listNamespaces({ query: { limit: 1000 } }),
    client.listAgents({ query: { limit: 1000 } }),
    client.listProjects({ query: { limit: 1000 } }),
  ]);
  const slug = new Map(namespaces.map((n) => [n.id, n.slug]));
  return {
    org: [{ name: `this org (${whoami.org_id})`, value: whoami.org_id, label: 'current' }],
    namespace: namespaces.map((n) => ({ name: `${n.slug} (${n.id})`, value: n.id, label: n.slug })),
    agent: agents.map((a) => inNamespace(a, slug)),
    project: projects.map((p) => inNamespace(p, slug)),
  };
}

/** A pick-list choice for an agent or project: `ns/name (id)`, labelled `ns/name`. */
function inNamespace(resource: { id: string; name: string; namespace_id: string }, slug: Map<string, string>) {
  const label = `${slug.get(resource.namespace_id) ?? resource.namespace_id}/${resource.name}`;
  return { name: `${label} (${resource.id})`, value: resource.id, label };
}

/** The review: the key's fields, then its scopes as a table, on stderr (stdout is for the secret). */
async function showReview(ctx: CommandContext, draft: KeyDraft): Promise<void> {
  // Names, as the pick lists showed them; --wide adds the ids.
  const names = await nameBook(ctx, [...kindsOfScopes([draft]), 'groups']);
  const target = { tty: true, chalk: ctx.chalk, wide: ctx.globals.wide };
  const fields = await renderView(
    record([
      ['Name', draft.name],
      ['Description', draft.description],
      ['Expires', describeExpiry(draft.expires_at)],
      ['Sharing groups', draft.sharing_group_ids.length ? draft.sharing_group_ids.map((id) => names.group(id)).join(', ') : 'none'],
      ['Sharing group ids', draft.sharing_group_ids.join(', '), 'text', 'wide'],
    ]),
    target,
  );
  const scopes = await renderView(
    table<Scope>(
      [
        { header: 'TYPE', value: (s) => s.resource_type },
        { header: 'RESOURCE', value: (s) => names.resource(s) },
        { header: 'RESOURCE ID', value: (s) => s.resource_id, wide: true },
        { header: 'ROLE', value: (s) => s.role },
      ],
      draft.scopes,
      '',
    ),
    target,
  );
  ctx.io.stderr.write(`\nReview\n${fields.stdout}\n${scopes.stdout}\n`);
}
