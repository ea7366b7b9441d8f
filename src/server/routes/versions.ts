import type { RouteHost, ServiceContext } from '../route-host.js';
import { createRegistrationToken, deregisterReplica, getSigningSecret, registerVersion, registerWithToken } from '../domain/registration.js';
import { getVersion, listAgentVersions, listBranchVersions, listVersionEvents, resolveAgentVersion } from '../domain/versions.js';
import { ApiError } from '../errors.js';
import { ANONYMOUS } from '../auth/authenticate.js';

/** Every version endpoint but the log stream (runtime.ts, beside the runtime that holds the logs). */
export function registerVersionRoutes(host: RouteHost, service: ServiceContext): void {
  const db = service.store.db;
  host.handle('listBranchVersions', async ({ params, query }, call) => listBranchVersions(db, await call.access(), params.branch_id, query.limit));
  host.handle('listAgentVersions', async ({ params, query }, call) => listAgentVersions(db, await call.access(), params, query));
  host.handle('getVersion', async ({ params }, call) => getVersion(db, await call.access(), params.version_id));
  host.handle('listVersionEvents', async ({ params }, call) => listVersionEvents(db, await call.access(), params.version_id));
  host.handle('resolveAgentVersion', async ({ params }, call) => resolveAgentVersion(db, await call.access(), params));
  host.handle('registerVersion', async ({ body }, call) => {
    if (call.actor !== ANONYMOUS) return registerVersion(db, await call.access(), body);
    // An agent process: its registration token is the credential.
    if (!body.registration_token)
      throw new ApiError(401, 'unauthorized', 'Send an API key, or a registration_token in the body', { 'WWW-Authenticate': 'Bearer' });
    return registerWithToken(db, { ...body, registration_token: body.registration_token });
  });
  host.handle('createRegistrationToken', async ({ params }, call) => createRegistrationToken(db, await call.access(), params.version_id));
  host.handle('deregisterReplica', async ({ params, body }, call) => deregisterReplica(db, await call.access(), params.version_id, body.acp_url));
  host.handle('getSigningSecret', async ({ params }, call) => getSigningSecret(db, await call.access(), params.version_id));
}
