import type { Namespace, Project } from '../../contract/resources.js';
import type { Db } from '../store/db.js';
import type { Permissions } from '../auth/policy.js';
import { grantOwnership } from '../auth/grants.js';
import { conflict, invalid, notFound } from './errors.js';
import { newId } from '../store/ids.js';
import { toNamespace, toProject } from '../store/mappers.js';
import { isUniqueViolation } from '../store/sql.js';
import { inCallerOrg, namespaceBySlug } from './lookup.js';
import { pageOf, pageOffset, type PageInput } from './paging.js';
import { visibleRows } from './visibility.js';

/** `/agents/name/{ns}/{agent}` would shadow `/agents/{ns}/{agent}/versions` (and the like) for a namespace called `name`. */
const RESERVED_SLUGS: readonly string[] = ['name'];

/** `POST /namespaces`: org admins only; the slug is unique (409 `namespace_exists`). */
export async function createNamespace(db: Db, perms: Permissions, input: { name: string; slug: string }): Promise<Namespace> {
  perms.requireOrgAdmin('create namespaces');
  if (RESERVED_SLUGS.includes(input.slug)) throw invalid(['body', 'slug'], `${input.slug} is reserved: /agents/${input.slug}/... addresses agents by name`);
  try {
    const row = await db
      .insertInto('namespaces')
      .values({ id: newId('namespace'), org_id: perms.actor.orgId, name: input.name, slug: input.slug, created_by_key_id: perms.actor.keyId || null })
      .returningAll()
      .executeTakeFirstOrThrow();
    return toNamespace(row);
  } catch (error) {
    if (isUniqueViolation(error)) throw conflict('namespace_exists', `A namespace with slug ${input.slug} already exists`);
    throw error;
  }
}

/** `GET /namespaces`: the namespaces of the key's org that it may discover. */
export async function listNamespaces(db: Db, perms: Permissions, page: PageInput): Promise<{ namespaces: Namespace[]; total: number }> {
  const rows = await db
    .selectFrom('namespaces')
    .selectAll()
    .where('org_id', '=', perms.actor.orgId)
    .orderBy('created_at', page.order_direction)
    .orderBy('id', page.order_direction)
    .execute();
  const visible = rows.filter((ns) => perms.can('discover', { type: 'namespace', id: ns.id }));
  const { items, total } = pageOf(visible, page);
  return { namespaces: items.map(toNamespace), total };
}

/**
 * `POST /projects`: needs admin on the namespace (namespace or org admins). The creating key and its
 * sharing groups receive `owner` on the project in the same transaction. Names are unique per
 * namespace (409 `project_exists`).
 */
export async function createProject(db: Db, perms: Permissions, input: { namespace: string; name: string; description: string }): Promise<Project> {
  const ns = await namespaceBySlug(db, perms, input.namespace);
  perms.require('admin', { type: 'namespace', id: ns.id }, `Namespace ${input.namespace}`);
  try {
    const row = await db.transaction().execute(async (trx) => {
      const project = await trx
        .insertInto('projects')
        .values({
          id: newId('project'),
          namespace_id: ns.id,
          name: input.name,
          description: input.description,
          created_by_key_id: perms.actor.keyId || null,
        })
        .returningAll()
        .executeTakeFirstOrThrow();
      await grantOwnership(trx, perms.actor, 'project', project.id);
      return project;
    });
    return toProject(row);
  } catch (error) {
    if (isUniqueViolation(error)) throw conflict('project_exists', `Namespace ${input.namespace} already has a project named ${input.name}`);
    throw error;
  }
}

/** `GET /projects`: projects the key may discover, optionally in one namespace (by slug). */
export async function listProjects(db: Db, perms: Permissions, query: PageInput & { namespace?: string }): Promise<{ projects: Project[]; total: number }> {
  const ns = query.namespace === undefined ? undefined : await namespaceBySlug(db, perms, query.namespace);
  let select = db
    .selectFrom('projects')
    .where(inCallerOrg(perms, 'projects.namespace_id'))
    .where((eb) => visibleRows(eb, perms.visible('project'), 'projects.namespace_id', 'projects.id'));
  if (ns) select = select.where('projects.namespace_id', '=', ns.id);
  const [rows, count] = await Promise.all([
    select
      .selectAll('projects')
      .orderBy('projects.created_at', query.order_direction)
      .orderBy('projects.id', query.order_direction)
      .limit(query.limit)
      .offset(pageOffset(query))
      .execute(),
    select.select((eb) => eb.fn.countAll<string>().as('n')).executeTakeFirstOrThrow(),
  ]);
  const total = Number(count.n);
  if (ns) hideUndiscoverableNamespace(perms, ns, total);
  return { projects: rows.map(toProject), total };
}

/**
 * A namespace filter on a list: a key that may not discover the namespace and sees nothing in it
 * gets the same 404 as for an unknown slug, so slugs do not leak.
 */
export function hideUndiscoverableNamespace(perms: Permissions, ns: { id: string; slug: string }, visibleCount: number): void {
  if (visibleCount === 0 && !perms.can('discover', { type: 'namespace', id: ns.id })) {
    throw notFound(`Namespace ${ns.slug}`);
  }
}
