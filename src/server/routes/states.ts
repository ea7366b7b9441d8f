import type { FastifyReply } from 'fastify';
import type { State } from '../../contract/resources.js';
import type { RouteHost, ServiceContext } from '../route-host.js';
import { createState, deleteState, etagOf, getState, listStates, mergeState, parseIfMatch, replaceState } from '../domain/states.js';

/** Every single-state response carries its version as the ETag. */
const withEtag = (reply: FastifyReply, state: State): State => {
  reply.header('ETag', etagOf(state.version));
  return state;
};

export function registerStateRoutes(host: RouteHost, service: ServiceContext): void {
  const db = service.store.db;
  host.handle('createState', async ({ body }, call) => withEtag(call.reply, await createState(db, await call.access(), body)));
  host.handle('listStates', async ({ query }, call) => listStates(db, await call.access(), query));
  host.handle('getState', async ({ params }, call) => withEtag(call.reply, await getState(db, await call.access(), params.state_id)));
  host.handle('replaceState', async ({ params, body }, call) =>
    withEtag(call.reply, await replaceState(db, await call.access(), params.state_id, body, parseIfMatch(call.request.headers['if-match']))),
  );
  host.handle('mergeState', async ({ params, body }, call) =>
    withEtag(call.reply, await mergeState(db, await call.access(), params.state_id, body.state, parseIfMatch(call.request.headers['if-match']))),
  );
  host.handle('deleteState', async ({ params }, call) => deleteState(db, await call.access(), params.state_id, parseIfMatch(call.request.headers['if-match'])));
}
