import type { RouteHost, ServiceContext } from '../route-host.js';
import {
  getBranch,
  getVersion,
  listAgentBranches,
  listAgentVersions,
  listBranchEvents,
  listBranchVersions,
  listEnvironmentBranches,
  listVersionEvents,
  resolveAgentVersion,
} from '../domain/branches.js';

export function registerBranchRoutes(host: RouteHost, service: ServiceContext): void {
  const db = service.store.db;
  host.handle('listBranchVersions', async ({ params, query }, call) => listBranchVersions(db, await call.access(), params.branch_id, query.limit));
  host.handle('listAgentVersions', async ({ params, query }, call) => listAgentVersions(db, await call.access(), params, query));
  host.handle('listAgentBranches', async ({ params, query }, call) => listAgentBranches(db, await call.access(), params, query.include_retired));
  host.handle('listEnvironmentBranches', async ({ params }, call) => listEnvironmentBranches(db, await call.access(), params, params.env_name));
  host.handle('getBranch', async ({ params }, call) => getBranch(db, await call.access(), params.branch_id));
  host.handle('getVersion', async ({ params }, call) => getVersion(db, await call.access(), params.version_id));
  host.handle('listVersionEvents', async ({ params }, call) => listVersionEvents(db, await call.access(), params.version_id));
  host.handle('listBranchEvents', async ({ params }, call) => listBranchEvents(db, await call.access(), params.branch_id));
  host.handle('resolveAgentVersion', async ({ params }, call) => resolveAgentVersion(db, await call.access(), params));
}
