import type { RouteHost, ServiceContext } from '../route-host.js';
import { deploy, registerVersion, retireBranch, rollback } from '../domain/lifecycle.js';
import { createRegistrationToken, getSigningSecret, registerWithToken } from '../domain/registration.js';
import { ApiError } from '../errors.js';
import { ANONYMOUS } from '../app.js';

export function registerLifecycleRoutes(host: RouteHost, service: ServiceContext): void {
  const db = service.store.db;
  host.handle('deploy', async ({ body }, call) => deploy(db, await call.access(), body, service.config.imageRetentionDays));
  host.handle('registerVersion', async ({ body }, call) => {
    if (call.actor !== ANONYMOUS) return registerVersion(db, await call.access(), body);
    // An agent process: its registration token is the credential.
    if (!body.registration_token) throw new ApiError(401, 'unauthorized', 'Send an API key, or a registration_token in the body', { 'WWW-Authenticate': 'Bearer' });
    return registerWithToken(db, { ...body, registration_token: body.registration_token });
  });
  host.handle('rollbackBranch', async ({ params, body }, call) => rollback(db, await call.access(), params.branch_id, body.target_version_id, body.dry_run));
  host.handle('retireBranch', async ({ params, body }, call) => retireBranch(db, await call.access(), params.branch_id, body.reason, body.force));
  host.handle('createRegistrationToken', async ({ params }, call) => createRegistrationToken(db, await call.access(), params.version_id));
  host.handle('getSigningSecret', async ({ params }, call) => getSigningSecret(db, await call.access(), params.version_id));
}
