import { sql } from 'kysely';
import type { RouteHost, ServiceContext } from '../route-host.js';

export function registerMetaRoutes(host: RouteHost, service: ServiceContext): void {
  host.handle('healthz', async () => ({ status: 'ok' }));
  host.handle('readyz', async () => {
    await sql`SELECT 1`.execute(service.store.db);
    return { status: 'ok', engine: service.store.engine };
  });
}
