import { RawJson, type RouteHost, type ServiceContext } from '../route-host.js';
import { cancelTask, createTask, deleteTask, getTask, getTaskByName, listTasks, updateTask } from '../domain/tasks.js';
import { migrateTasks, migrationResponseJson } from '../domain/migrate.js';
import { getTaskTurn, interruptTask } from '../domain/turns.js';

export function registerTaskRoutes(host: RouteHost, service: ServiceContext): void {
  const db = service.store.db;
  host.handle('createTask', async ({ body }, call) => createTask(db, await call.access(), body));
  host.handle('listTasks', async ({ query }, call) => listTasks(db, await call.access(), query));
  host.handle('getTask', async ({ params, query }, call) => getTask(db, await call.access(), params.task_id, query.relationships));
  host.handle('getTaskByName', async ({ params, query }, call) => getTaskByName(db, await call.access(), params.task_name, query.relationships));
  host.handle('updateTask', async ({ params, body }, call) => updateTask(db, await call.access(), params.task_id, body));
  host.handle('deleteTask', async ({ params }, call) => deleteTask(db, await call.access(), params.task_id));
  host.handle('cancelTask', async ({ params }, call) => cancelTask(db, await call.access(), params.task_id));
  host.handle('interruptTask', async ({ params }, call) => interruptTask(db, await call.access(), params.task_id));
  host.handle('getTaskTurn', async ({ params }, call) => getTaskTurn(db, await call.access(), params.task_id));
  host.handle('migrateTasks', async ({ body }, call) => new RawJson(migrationResponseJson(await migrateTasks(db, await call.access(), body))));
}
