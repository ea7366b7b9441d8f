import type { RouteHost, ServiceContext } from '../route-host.js';
import { registerMetaRoutes } from './meta.js';
import { registerLifecycleRoutes } from './lifecycle.js';
import { registerTaskRoutes } from './tasks.js';
import { registerNamespaceRoutes } from './namespaces.js';
import { registerAgentRoutes } from './agents.js';
import { registerBranchRoutes } from './branches.js';
import { registerVersionRoutes } from './versions.js';
import { registerEnvironmentRoutes } from './environments.js';
import { registerStateRoutes } from './states.js';
import { registerKeyRoutes } from './keys.js';
import { registerGroupRoutes } from './groups.js';
import { registerConversationRoutes } from './conversation.js';
import { registerFilesystemRoutes } from './filesystems.js';
import { registerRuntimeRoutes } from './runtime.js';
import { registerRehearsalRoutes } from './rehearsals.js';

export function registerRoutes(host: RouteHost, service: ServiceContext): void {
  registerMetaRoutes(host, service);
  registerLifecycleRoutes(host, service);
  registerTaskRoutes(host, service);
  registerNamespaceRoutes(host, service);
  registerAgentRoutes(host, service);
  registerBranchRoutes(host, service);
  registerVersionRoutes(host, service);
  registerEnvironmentRoutes(host, service);
  registerStateRoutes(host, service);
  registerKeyRoutes(host, service);
  registerGroupRoutes(host, service);
  registerConversationRoutes(host, service);
  registerFilesystemRoutes(host, service);
  registerRuntimeRoutes(host, service);
  registerRehearsalRoutes(host, service);
}
