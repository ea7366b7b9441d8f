import type { RouteHost, ServiceContext } from '../route-host.js';
import { deploy, retireBranch, rollback } from '../domain/lifecycle.js';

/** What changes which version serves a branch: deploy, rollback, retire. */
export function registerLifecycleRoutes(host: RouteHost, service: ServiceContext): void {
  const db = service.store.db;
  host.handle('deploy', async ({ body }, call) => deploy(db, await call.access(), body, service.config.imageRetentionDays));
  host.handle('rollbackBranch', async ({ params, body }, call) => rollback(db, await call.access(), params.branch_id, body.target_version_id, body.dry_run));
  host.handle('retireBranch', async ({ params, body }, call) => retireBranch(db, await call.access(), params.branch_id, body.reason, body.force));
}
