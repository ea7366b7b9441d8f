import type { RouteHost, ServiceContext } from '../route-host.js';
import { getBranch, listAgentBranches, listBranchEvents, listEnvironmentBranches } from '../domain/branches.js';

export function registerBranchRoutes(host: RouteHost, service: ServiceContext): void {
  const db = service.store.db;
  host.handle('listAgentBranches', async ({ params, query }, call) => listAgentBranches(db, await call.access(), params, query.include_retired));
  host.handle('listEnvironmentBranches', async ({ params }, call) => listEnvironmentBranches(db, await call.access(), params, params.env_name));
  host.handle('getBranch', async ({ params }, call) => getBranch(db, await call.access(), params.branch_id));
  host.handle('listBranchEvents', async ({ params }, call) => listBranchEvents(db, await call.access(), params.branch_id));
}
