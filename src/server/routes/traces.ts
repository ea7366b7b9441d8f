import { taskTraces, traceById } from '../domain/traces.js';
import type { RouteHost, ServiceContext } from '../route-host.js';

export function registerTraceRoutes(host: RouteHost, service: ServiceContext): void {
  const db = service.store.db;
  host.handle('getTaskTraces', async ({ params, query }, call) => taskTraces(db, await call.access(), params.task_id, query));
  host.handle('getTrace', async ({ params }, call) => traceById(db, await call.access(), params.trace_id));
}
