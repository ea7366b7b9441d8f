import type { RouteHost, ServiceContext } from '../route-host.js';
import { controlRollout, createRollout, getRollout, listRollouts } from '../domain/rollouts.js';
import { getMigration, listMigrations, undoMigration } from '../domain/migration-history.js';

export function registerRolloutRoutes(host: RouteHost, service: ServiceContext): void {
  const db = service.store.db;
  host.handle('createRollout', async ({ body }, call) => createRollout(db, await call.access(), body));
  host.handle('listRollouts', async ({ query }, call) => listRollouts(db, await call.access(), query));
  host.handle('getRollout', async ({ params }, call) => getRollout(db, await call.access(), params.rollout_id));
  host.handle('pauseRollout', async ({ params }, call) => controlRollout(db, await call.access(), params.rollout_id, 'pause'));
  host.handle('resumeRollout', async ({ params }, call) => controlRollout(db, await call.access(), params.rollout_id, 'resume'));
  host.handle('abortRollout', async ({ params }, call) => controlRollout(db, await call.access(), params.rollout_id, 'abort'));
  host.handle('listMigrations', async ({ query }, call) => listMigrations(db, await call.access(), query));
  host.handle('getMigration', async ({ params }, call) => getMigration(db, await call.access(), params.migration_id));
  host.handle('undoMigration', async ({ params }, call) => undoMigration(db, await call.access(), params.migration_id));
}
