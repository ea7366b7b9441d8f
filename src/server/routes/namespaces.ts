import type { RouteHost, ServiceContext } from '../route-host.js';
import { createNamespace, createProject, listNamespaces, listProjects } from '../domain/namespaces.js';

export function registerNamespaceRoutes(host: RouteHost, service: ServiceContext): void {
  const db = service.store.db;
  host.handle('createNamespace', async ({ body }, call) => createNamespace(db, await call.access(), body));
  host.handle('listNamespaces', async ({ query }, call) => listNamespaces(db, await call.access(), query));
  host.handle('createProject', async ({ body }, call) => createProject(db, await call.access(), body));
  host.handle('listProjects', async ({ query }, call) => listProjects(db, await call.access(), query));
}
