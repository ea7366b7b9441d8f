import type { RouteHost, ServiceContext } from '../route-host.js';
import { addGroupMember, createGroup, deleteGroup, getGroup, listGroupMembers, listGroups, removeGroupMember } from '../domain/groups.js';

export function registerGroupRoutes(host: RouteHost, service: ServiceContext): void {
  const db = service.store.db;
  host.handle('createGroup', async ({ body }, call) => createGroup(db, await call.access(), body));
  host.handle('listGroups', async ({ query }, call) => listGroups(db, await call.access(), query));
  host.handle('getGroup', async ({ params }, call) => getGroup(db, await call.access(), params.group_id));
  host.handle('deleteGroup', async ({ params }, call) => deleteGroup(db, await call.access(), params.group_id));
  host.handle('listGroupMembers', async ({ params }, call) => listGroupMembers(db, await call.access(), params.group_id));
  host.handle('addGroupMember', async ({ params }, call) => addGroupMember(db, await call.access(), params.group_id, params.member_id));
  host.handle('removeGroupMember', async ({ params }, call) => removeGroupMember(db, await call.access(), params.group_id, params.member_id));
}
