import { sql } from 'kysely';
import type { Db } from '../store/db.js';
import { DEV_IMAGE_PREFIX } from '../../contract/enums.js';
import { LIVE_AGENT_STATUS, LIVE_TASK_STATUSES, RUNNING_VERSION_STATUSES, type VersionStatus } from '../../contract/lifecycle.js';

/** What the runtime reconciler needs of a version. */
export interface RuntimeVersion {
  id: string;
  branch_id: string;
  agent_id: string;
  agent_name: string;
  org_id: string;
  status: VersionStatus;
  image_url: string;
  source_filesystem_id: string | null;
  desired_replicas: number;
  acp_type: string;
  /** `{requests, limits}` of cpu and memory as deployed, or null. */
  resources: unknown;
}

function selectRuntimeVersions(db: Db) {
  return db
    .selectFrom('versions as v')
    .innerJoin('agents as a', 'a.id', 'v.agent_id')
    .innerJoin('namespaces as n', 'n.id', 'a.namespace_id')
    .select([
      'v.id',
      'v.branch_id',
      'v.agent_id',
      'v.status',
      'v.image_url',
      'v.source_filesystem_id',
      'v.desired_replicas',
      'v.acp_type',
      'v.resources',
      'n.org_id',
    ])
    .select(sql<string>`n.slug || '/' || a.name`.as('agent_name'));
}

/**
 * Every version that should have processes now (level-triggered: the reconciler compares this
 * with what runs): DEPLOYING, ACTIVE and UNHEALTHY versions of live agents, and DRAINING ones
 * while a task still runs on them.
 */
export async function versionsThatShouldRun(db: Db): Promise<RuntimeVersion[]> {
  return (
    selectRuntimeVersions(db)
      .where('a.status', '=', LIVE_AGENT_STATUS)
      // A dev version runs on the developer's machine (`agentctl dev`), never under a runtime driver.
      .where(sql<boolean>`left(v.image_url, ${DEV_IMAGE_PREFIX.length}) <> ${DEV_IMAGE_PREFIX}`)
      .where((eb) =>
        eb.or([
          eb('v.status', 'in', RUNNING_VERSION_STATUSES),
          eb.and([
            eb('v.status', '=', 'DRAINING'),
            eb.exists(eb.selectFrom('tasks as t').select('t.id').whereRef('t.current_version_id', '=', 'v.id').where('t.status', 'in', LIVE_TASK_STATUSES)),
          ]),
        ]),
      )
      .orderBy('v.deployed_at')
      .execute()
  );
}

export async function runtimeVersion(db: Db, versionId: string): Promise<RuntimeVersion | undefined> {
  return selectRuntimeVersions(db).where('v.id', '=', versionId).executeTakeFirst();
}
