import type { RouteHost, ServiceContext } from '../app.js';
import { registerMetaRoutes } from './meta.js';
import { registerLifecycleRoutes } from './lifecycle.js';
import { registerTaskRoutes } from './tasks.js';

export function registerRoutes(host: RouteHost, service: ServiceContext): void {
  registerMetaRoutes(host, service);
  registerLifecycleRoutes(host, service);
  registerTaskRoutes(host, service);
}
