import type { RouteHost, ServiceContext } from '../route-host.js';
import { deleteSecret, listSecrets, setSecret } from '../domain/secrets.js';

export function registerSecretRoutes(host: RouteHost, service: ServiceContext): void {
  const db = service.store.db;
  host.handle('listSecrets', async ({ params }, call) => listSecrets(db, await call.access(), params));
  host.handle('setSecret', async ({ params, body }, call) => setSecret(db, service.secretsKey, await call.access(), params, params.secret_name, body));
  host.handle('deleteSecret', async ({ params, query }, call) => deleteSecret(db, await call.access(), params, params.secret_name, query.environment));
}
