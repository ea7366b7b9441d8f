import type { RouteHost, ServiceContext } from '../route-host.js';
import { createSchedule, deleteSchedule, getSchedule, listSchedules, setScheduleStatus, triggerSchedule } from '../domain/schedules.js';

export function registerScheduleRoutes(host: RouteHost, service: ServiceContext): void {
  const db = service.store.db;
  host.handle('createSchedule', async ({ body }, call) => createSchedule(db, await call.access(), body));
  host.handle('listSchedules', async ({ query }, call) => listSchedules(db, await call.access(), query));
  host.handle('getSchedule', async ({ params }, call) => getSchedule(db, await call.access(), params.schedule_id));
  host.handle('pauseSchedule', async ({ params }, call) => setScheduleStatus(db, await call.access(), params.schedule_id, 'PAUSED'));
  host.handle('resumeSchedule', async ({ params }, call) => setScheduleStatus(db, await call.access(), params.schedule_id, 'ACTIVE'));
  host.handle('triggerSchedule', async ({ params }, call) => triggerSchedule(db, await call.access(), params.schedule_id));
  host.handle('deleteSchedule', async ({ params }, call) => deleteSchedule(db, await call.access(), params.schedule_id));
}
