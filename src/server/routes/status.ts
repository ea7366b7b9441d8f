import type { RouteHost, ServiceContext } from '../route-host.js';
import { getStatus } from '../domain/status.js';
import { SERVICE_VERSION } from '../version.js';

export function registerStatusRoutes(host: RouteHost, service: ServiceContext): void {
  const db = service.store.db;
  host.handle('getStatus', async ({ query }, call) => getStatus(db, await call.access(), query, { version: SERVICE_VERSION, engine: service.store.engine }));
}
