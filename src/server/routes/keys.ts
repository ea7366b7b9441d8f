import type { RouteHost, ServiceContext } from '../route-host.js';
import { createKey, getKey, listKeys, listPresets, revokeKey, rotateKey, updateKeyGroups, updateKeyScopes, whoami } from '../domain/keys.js';

export function registerKeyRoutes(host: RouteHost, service: ServiceContext): void {
  const db = service.store.db;
  host.handle('whoami', async (_input, call) => whoami(db, call.actor));
  host.handle('listPresets', async () => listPresets());
  host.handle('createKey', async ({ body }, call) => createKey(db, await call.access(), body));
  host.handle('listKeys', async ({ query }, call) => listKeys(db, await call.access(), query.include_revoked));
  host.handle('getKey', async ({ params }, call) => getKey(db, await call.access(), params.key_id));
  host.handle('revokeKey', async ({ params }, call) => revokeKey(db, await call.access(), params.key_id));
  host.handle('updateKeyScopes', async ({ params, body }, call) => updateKeyScopes(db, await call.access(), params.key_id, body.scopes));
  host.handle('updateKeyGroups', async ({ params, body }, call) => updateKeyGroups(db, await call.access(), params.key_id, body.sharing_group_ids));
  host.handle('rotateKey', async ({ params }, call) => rotateKey(db, await call.access(), params.key_id));
}
