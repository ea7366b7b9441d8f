import type { FastifyReply } from 'fastify';
import type { State } from '../../contract/resources.js';
import type { RouteHost, ServiceContext } from '../route-host.js';
import { entityTag, entityTags } from '../errors.js';
import {
  createState,
  deleteState,
  getState,
  listStateHistory,
  listStates,
  mergeOrCreateState,
  mergeState,
  replaceState,
  type ExpectedVersions,
} from '../domain/states.js';

/** Every single-state response carries its version as the ETag. */
const withEtag = (reply: FastifyReply, state: State): State => {
  reply.header('ETag', entityTag(String(state.version)));
  return state;
};

/**
 * `If-Match`: absent -> no condition; `*` -> any current version; else the versions it names
 * (`"3"`, `W/"3"`, a list). A value naming no version matches nothing.
 */
export function expectedVersions(header: string | string[] | undefined): ExpectedVersions {
  if (header === undefined) return undefined;
  const tags = entityTags(header);
  if (tags.length === 1 && tags[0] === '*') return '*';
  return tags.filter((tag) => /^\d{1,9}$/.test(tag)).map(Number);
}

export function registerStateRoutes(host: RouteHost, service: ServiceContext): void {
  const db = service.store.db;
  const ifMatch = (headers: Record<string, string | string[] | undefined>) => expectedVersions(headers['if-match']);
  host.handle('createState', async ({ body }, call) => withEtag(call.reply, await createState(db, await call.access(), body)));
  host.handle('listStates', async ({ query }, call) => listStates(db, await call.access(), query));
  host.handle('listStateHistory', async ({ params, query }, call) => listStateHistory(db, await call.access(), params.task_id, query));
  host.handle('getState', async ({ params }, call) => withEtag(call.reply, await getState(db, await call.access(), params.state_id)));
  host.handle('replaceState', async ({ params, body }, call) =>
    withEtag(call.reply, await replaceState(db, await call.access(), params.state_id, body, ifMatch(call.request.headers))),
  );
  host.handle('mergeState', async ({ params, body }, call) =>
    withEtag(call.reply, await mergeState(db, await call.access(), params.state_id, body.state, ifMatch(call.request.headers))),
  );
  host.handle('mergeOrCreateState', async ({ body }, call) => withEtag(call.reply, await mergeOrCreateState(db, await call.access(), body)));
  host.handle('deleteState', async ({ params }, call) => deleteState(db, await call.access(), params.state_id, ifMatch(call.request.headers)));
}
