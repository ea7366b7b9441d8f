/**
 * Where each operation lives and how it may be called: method, path, success status, whether it
 * needs a key, and whether a retry is safe. Plain data, no zod: a client can send a request before
 * it has loaded the schemas that parse the answer. The schemas are in endpoints.ts, under the same
 * names.
 */
export interface Route {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Fastify-style path: `/branches/:branch_id/versions`. */
  path: string;
  status: number;
  /**
   * false only for the health and schema endpoints; 'optional' where a body credential (a
   * registration token) stands in for a key.
   */
  auth?: boolean | 'optional';
  /** Accepts `Idempotency-Key`: the same key and body within 24 h returns the first response. */
  idempotencyKey?: boolean;
  /** Answers Server-Sent Events (`text/event-stream`), resumable with `Last-Event-ID`. */
  sse?: boolean;
  /** Safe to retry after a connection failure, 429 or 503. */
  idempotent?: boolean;
  /**
   * Bytes rather than JSON: the media types an upload takes (streamed, with its own size limit) or
   * the one a download answers with. The sync library (src/sync) calls these, not the JSON client.
   */
  binary?: { request?: readonly string[]; response?: string };
}

const route = <const R extends Route>(r: R): R => r;

export const routes = {
  healthz: route({ method: 'GET', path: '/healthz', status: 200, auth: false, idempotent: true }),
  readyz: route({ method: 'GET', path: '/readyz', status: 200, auth: false, idempotent: true }),
  createNamespace: route({ method: 'POST', path: '/namespaces', status: 201 }),
  listNamespaces: route({ method: 'GET', path: '/namespaces', status: 200, idempotent: true }),
  createProject: route({ method: 'POST', path: '/projects', status: 201 }),
  listProjects: route({ method: 'GET', path: '/projects', status: 200, idempotent: true }),
  deploy: route({ method: 'POST', path: '/agents/deploy', status: 201, idempotencyKey: true }),
  listAgents: route({ method: 'GET', path: '/agents', status: 200, idempotent: true }),
  getAgent: route({ method: 'GET', path: '/agents/:agent_id', status: 200, idempotent: true }),
  getAgentByName: route({ method: 'GET', path: '/agents/name/:namespace_slug/:agent_name', status: 200, idempotent: true }),
  deleteAgent: route({ method: 'DELETE', path: '/agents/:agent_id', status: 200 }),
  deleteAgentByName: route({ method: 'DELETE', path: '/agents/name/:namespace_slug/:agent_name', status: 200 }),
  listBranchVersions: route({ method: 'GET', path: '/branches/:branch_id/versions', status: 200, idempotent: true }),
  listAgentVersions: route({ method: 'GET', path: '/agents/:namespace_slug/:agent_name/versions', status: 200, idempotent: true }),
  listAgentBranches: route({ method: 'GET', path: '/agents/:namespace_slug/:agent_name/branches', status: 200, idempotent: true }),
  listEnvironmentBranches: route({ method: 'GET', path: '/agents/:namespace_slug/:agent_name/environments/:env_name/branches', status: 200, idempotent: true }),
  getBranch: route({ method: 'GET', path: '/branches/:branch_id', status: 200, idempotent: true }),
  rollbackBranch: route({ method: 'POST', path: '/branches/:branch_id/rollback', status: 200 }),
  retireBranch: route({ method: 'POST', path: '/branches/:branch_id/retire', status: 200 }),
  getVersion: route({ method: 'GET', path: '/versions/:version_id', status: 200, idempotent: true }),
  listVersionEvents: route({ method: 'GET', path: '/versions/:version_id/events', status: 200, idempotent: true }),
  listBranchEvents: route({ method: 'GET', path: '/branches/:branch_id/events', status: 200, idempotent: true }),
  resolveAgentVersion: route({ method: 'GET', path: '/agents/:namespace_slug/:agent_name/versions/:ref', status: 200, idempotent: true }),
  registerVersion: route({ method: 'POST', path: '/versions/register', status: 200, auth: 'optional' }),
  createRegistrationToken: route({ method: 'POST', path: '/versions/:version_id/registration-tokens', status: 201 }),
  getSigningSecret: route({ method: 'GET', path: '/versions/:version_id/signing-secret', status: 200, idempotent: true }),
  listEnvironments: route({ method: 'GET', path: '/agents/:namespace_slug/:agent_name/environments', status: 200, idempotent: true }),
  createEnvironment: route({ method: 'POST', path: '/agents/:namespace_slug/:agent_name/environments', status: 201 }),
  getEnvironment: route({ method: 'GET', path: '/agents/:namespace_slug/:agent_name/environments/:env_name', status: 200, idempotent: true }),
  updateEnvironment: route({ method: 'PATCH', path: '/agents/:namespace_slug/:agent_name/environments/:env_name', status: 200 }),
  deleteEnvironment: route({ method: 'DELETE', path: '/agents/:namespace_slug/:agent_name/environments/:env_name', status: 200 }),
  resolveEnvironment: route({ method: 'GET', path: '/agents/:namespace_slug/:agent_name/resolve-env', status: 200, idempotent: true }),
  createTask: route({ method: 'POST', path: '/tasks', status: 201, idempotencyKey: true }),
  listTasks: route({ method: 'GET', path: '/tasks', status: 200, idempotent: true }),
  getTask: route({ method: 'GET', path: '/tasks/:task_id', status: 200, idempotent: true }),
  getTaskByName: route({ method: 'GET', path: '/tasks/name/:task_name', status: 200, idempotent: true }),
  updateTask: route({ method: 'PATCH', path: '/tasks/:task_id', status: 200 }),
  deleteTask: route({ method: 'DELETE', path: '/tasks/:task_id', status: 200 }),
  cancelTask: route({ method: 'POST', path: '/tasks/:task_id/cancel', status: 200 }),
  migrateTasks: route({ method: 'POST', path: '/tasks/migrate', status: 200 }),
  streamTask: route({ method: 'GET', path: '/tasks/:task_id/stream', status: 200, idempotent: true, sse: true }),
  createEvent: route({ method: 'POST', path: '/tasks/:task_id/events', status: 201, idempotencyKey: true }),
  listEvents: route({ method: 'GET', path: '/events', status: 200, idempotent: true }),
  getEvent: route({ method: 'GET', path: '/events/:event_id', status: 200, idempotent: true }),
  reportHandlerError: route({ method: 'POST', path: '/tasks/:task_id/handler-errors', status: 201, idempotencyKey: true }),
  completeDelivery: route({ method: 'POST', path: '/deliveries/:delivery_id/complete', status: 200, idempotent: true }),
  renewDeliveryLease: route({ method: 'POST', path: '/deliveries/:delivery_id/renew', status: 200, idempotent: true }),
  createMessage: route({ method: 'POST', path: '/messages', status: 201, idempotencyKey: true }),
  updateMessage: route({ method: 'PUT', path: '/messages/:message_id', status: 200 }),
  listMessages: route({ method: 'GET', path: '/messages', status: 200, idempotent: true }),
  getMessage: route({ method: 'GET', path: '/messages/:message_id', status: 200, idempotent: true }),
  listTrackers: route({ method: 'GET', path: '/tracker', status: 200, idempotent: true }),
  getTracker: route({ method: 'GET', path: '/tracker/:tracker_id', status: 200, idempotent: true }),
  updateTracker: route({ method: 'PATCH', path: '/tracker/:tracker_id', status: 200 }),
  createState: route({ method: 'POST', path: '/states', status: 200, idempotencyKey: true }),
  listStates: route({ method: 'GET', path: '/states', status: 200, idempotent: true }),
  getState: route({ method: 'GET', path: '/states/:state_id', status: 200, idempotent: true }),
  replaceState: route({ method: 'PUT', path: '/states/:state_id', status: 200 }),
  mergeState: route({ method: 'PATCH', path: '/states/:state_id', status: 200 }),
  mergeOrCreateState: route({ method: 'POST', path: '/states/merge', status: 200 }),
  deleteState: route({ method: 'DELETE', path: '/states/:state_id', status: 200 }),
  whoami: route({ method: 'GET', path: '/whoami', status: 200, idempotent: true }),
  listPresets: route({ method: 'GET', path: '/api_keys/presets', status: 200, idempotent: true }),
  createKey: route({ method: 'POST', path: '/api_keys', status: 201 }),
  listKeys: route({ method: 'GET', path: '/api_keys', status: 200, idempotent: true }),
  getKey: route({ method: 'GET', path: '/api_keys/:key_id', status: 200, idempotent: true }),
  revokeKey: route({ method: 'DELETE', path: '/api_keys/:key_id', status: 200 }),
  updateKeyScopes: route({ method: 'PATCH', path: '/api_keys/:key_id', status: 200 }),
  updateKeyGroups: route({ method: 'PATCH', path: '/api_keys/:key_id/sharing-groups', status: 200 }),
  rotateKey: route({ method: 'POST', path: '/api_keys/:key_id/rotate', status: 200 }),
  createGroup: route({ method: 'POST', path: '/groups', status: 201 }),
  listGroups: route({ method: 'GET', path: '/groups', status: 200, idempotent: true }),
  getGroup: route({ method: 'GET', path: '/groups/:group_id', status: 200, idempotent: true }),
  deleteGroup: route({ method: 'DELETE', path: '/groups/:group_id', status: 200 }),
  listGroupMembers: route({ method: 'GET', path: '/groups/:group_id/members', status: 200, idempotent: true }),
  addGroupMember: route({ method: 'PUT', path: '/groups/:group_id/members/:member_id', status: 200, idempotent: true }),
  removeGroupMember: route({ method: 'DELETE', path: '/groups/:group_id/members/:member_id', status: 200 }),
  createFilesystem: route({ method: 'POST', path: '/filesystems', status: 201 }),
  listFilesystems: route({ method: 'GET', path: '/filesystems', status: 200, idempotent: true }),
  getFilesystem: route({ method: 'GET', path: '/filesystems/:filesystem_id', status: 200, idempotent: true }),
  deleteFilesystem: route({ method: 'DELETE', path: '/filesystems/:filesystem_id', status: 200 }),
  downloadFilesystemArchive: route({ method: 'GET', path: '/filesystems/:filesystem_id/archive', status: 200, idempotent: true, binary: { response: 'application/zstd' } }),
  uploadFilesystemArchive: route({ method: 'PUT', path: '/filesystems/:filesystem_id/archive', status: 200, binary: { request: ['application/zstd', 'application/octet-stream'] } }),
  listFilesystemFiles: route({ method: 'GET', path: '/filesystems/:filesystem_id/files', status: 200, idempotent: true }),
  getFilesystemFile: route({ method: 'GET', path: '/filesystems/:filesystem_id/files/*', status: 200, idempotent: true, binary: { response: 'application/octet-stream' } }),
  downloadSystemFolderArchive: route({ method: 'GET', path: '/tasks/:task_id/system-folders/:folder_type/archive', status: 200, idempotent: true, binary: { response: 'application/zstd' } }),
  uploadSystemFolderArchive: route({ method: 'PUT', path: '/tasks/:task_id/system-folders/:folder_type/archive', status: 200, binary: { request: ['application/zstd', 'application/octet-stream'] } }),
  /** JSON `{lines}` (the client's method); with `follow=true` Server-Sent Events instead, so not marked `sse`. */
  getVersionLogs: route({ method: 'GET', path: '/versions/:version_id/logs', status: 200, idempotent: true }),
} as const;

export type RouteName = keyof typeof routes;
