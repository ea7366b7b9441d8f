import type { RouteHost, ServiceContext } from '../route-host.js';
import {
  createEvent,
  createMessage,
  getEvent,
  getMessage,
  getTracker,
  listEvents,
  listMessages,
  listTrackers,
  reportHandlerError,
  updateMessage,
  updateTracker,
} from '../domain/conversation.js';

export function registerConversationRoutes(host: RouteHost, service: ServiceContext): void {
  const db = service.store.db;
  host.handle('createEvent', async ({ params, body }, call) => createEvent(db, await call.access(), params.task_id, body.content));
  host.handle('listEvents', async ({ query }, call) => listEvents(db, await call.access(), query));
  host.handle('getEvent', async ({ params }, call) => getEvent(db, await call.access(), params.event_id));
  host.handle('reportHandlerError', async ({ params, body }, call) => reportHandlerError(db, await call.access(), params.task_id, body));
  host.handle('createMessage', async ({ body }, call) => createMessage(db, await call.access(), body));
  host.handle('updateMessage', async ({ params, body }, call) => updateMessage(db, await call.access(), params.message_id, body));
  host.handle('listMessages', async ({ query }, call) => listMessages(db, await call.access(), query));
  host.handle('getMessage', async ({ params }, call) => getMessage(db, await call.access(), params.message_id));
  host.handle('listTrackers', async ({ query }, call) => listTrackers(db, await call.access(), query));
  host.handle('getTracker', async ({ params }, call) => getTracker(db, await call.access(), params.tracker_id));
  host.handle('updateTracker', async ({ params, body }, call) => updateTracker(db, await call.access(), params.tracker_id, body));
}
