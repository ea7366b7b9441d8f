import type { RouteHost, ServiceContext } from '../route-host.js';
import { invalid } from '../domain/errors.js';
import { createEnvironment, deleteEnvironment, getEnvironment, listEnvironments, resolveEnvironment, updateEnvironment } from '../domain/environments.js';

/** The body schemas drop unknown keys; `is_prod` is refused out loud instead, since a client sending it expects an effect. */
function refuseIsProd(body: unknown): void {
  if (body && typeof body === 'object' && 'is_prod' in body) {
    throw invalid(['body', 'is_prod'], 'is_prod cannot be set through the API: only the production environment created with the agent is', 'extra_forbidden');
  }
}

export function registerEnvironmentRoutes(host: RouteHost, service: ServiceContext): void {
  const db = service.store.db;
  host.handle('listEnvironments', async ({ params }, call) => listEnvironments(db, await call.access(), params));
  host.handle('createEnvironment', async ({ params, body }, call) => {
    refuseIsProd(call.request.body);
    return createEnvironment(db, await call.access(), params, body);
  });
  host.handle('getEnvironment', async ({ params }, call) => getEnvironment(db, await call.access(), params, params.env_name));
  host.handle('updateEnvironment', async ({ params, body }, call) => {
    refuseIsProd(call.request.body);
    return updateEnvironment(db, await call.access(), params, params.env_name, body);
  });
  host.handle('deleteEnvironment', async ({ params }, call) => deleteEnvironment(db, await call.access(), params, params.env_name));
  host.handle('resolveEnvironment', async ({ params, query }, call) => resolveEnvironment(db, await call.access(), params, query.branch));
}
