import type { RouteHost, ServiceContext } from '../route-host.js';
import { deleteAgent, deleteAgentByName, getAgent, getAgentByName, listAgents } from '../domain/agents.js';

export function registerAgentRoutes(host: RouteHost, service: ServiceContext): void {
  const db = service.store.db;
  host.handle('listAgents', async ({ query }, call) => listAgents(db, await call.access(), query));
  host.handle('getAgent', async ({ params }, call) => getAgent(db, await call.access(), params.agent_id));
  host.handle('getAgentByName', async ({ params }, call) => getAgentByName(db, await call.access(), params.namespace_slug, params.agent_name));
  host.handle('deleteAgent', async ({ params }, call) => deleteAgent(db, await call.access(), params.agent_id));
  host.handle('deleteAgentByName', async ({ params }, call) => deleteAgentByName(db, await call.access(), params.namespace_slug, params.agent_name));
}
