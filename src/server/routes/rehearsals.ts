import type { RouteHost, ServiceContext } from '../route-host.js';
import { createRehearsal, getRehearsal } from '../domain/rehearsals.js';

export function registerRehearsalRoutes(host: RouteHost, service: ServiceContext): void {
  const db = service.store.db;
  host.handle('createRehearsal', async ({ body }, call) => createRehearsal(db, await call.access(), body));
  host.handle('getRehearsal', async ({ params }, call) => getRehearsal(db, await call.access(), params.rehearsal_id));
}
