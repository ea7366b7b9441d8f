import type { RouteHost, ServiceContext } from '../app.js';
import { registerMetaRoutes } from './meta.js';

export function registerRoutes(host: RouteHost, service: ServiceContext): void {
  registerMetaRoutes(host, service);
}
