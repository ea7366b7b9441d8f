import type { ServerResponse } from 'node:http';
import type { StreamRecord } from '../../contract/conversation.js';
import { STREAM_HEARTBEAT_MS, type RouteHost, type ServiceContext } from '../route-host.js';
import { conflict, invalid } from '../domain/errors.js';
import { httpErrorOf } from '../errors.js';
import { completeDeliveries, completeDelivery, deliveryForAnswer, deliveryNow, devVersionForPull, renewDeliveryLease } from '../domain/deliveries.js';
import { PULL_DELIVERY_SSE_EVENT, PULL_OPEN_SSE_EVENT } from '../../contract/enums.js';
import {
  endsStream,
  openStream,
  createEvent,
  createMessage,
  appendMessageDelta,
  getEvent,
  getMessage,
  getTracker,
  listEvents,
  listMessages,
  readConversationPage,
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
  host.handle('completeDelivery', async ({ params, body }, call) =>
    completeDelivery(db, await call.access(), params.delivery_id, body?.spans ? { spans: body.spans, tracing: service.tracing } : undefined),
  );
  host.handle('completeDeliveries', async ({ body }, call) => {
    const completed = await completeDeliveries(db, await call.access(), body.deliveries, service.tracing);
    // Each refusal as its own request would have been answered: the status and `{detail, code}`.
    const results = completed.map((c) => {
      if ('delivery' in c) return { id: c.id, status: 200, delivery: c.delivery, error: null };
      const error = httpErrorOf(c.refused);
      return { id: c.id, status: error.status, delivery: null, error: { detail: error.detail, code: error.code } };
    });
    return { results };
  });
  host.handle('streamVersionDeliveries', async ({ params }, call) => {
    // Ids are delivery ids; what the stream held unanswered comes again anyway, so the value is only checked.
    parseLastEventId(call.request.headers['last-event-id']);
    const delivery = service.delivery;
    if (!delivery) throw conflict('no_runtime', 'This server delivers nothing (it runs without a dispatcher)');
    // Checked before the stream starts, so a refusal keeps its JSON body.
    const version = await devVersionForPull(db, await call.access(), params.version_id);
    const { reply, request } = call;
    reply.hijack();
    const raw = reply.raw;
    raw.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache', connection: 'keep-alive', 'x-request-id': request.id });
    raw.write(': pulling\n\n');
    const heartbeat = setInterval(() => raw.write(': heartbeat\n\n'), service.config.streamHeartbeatMs ?? STREAM_HEARTBEAT_MS);
    let open = true;
    const pull = delivery.openPull(
      version.id,
      (item) => {
        if (!open || raw.destroyed) return false;
        raw.write(`event: ${PULL_DELIVERY_SSE_EVENT}\nid: ${item.delivery_id}\ndata: ${JSON.stringify(item)}\n\n`);
        return true;
      },
      () => raw.destroy(),
    );
    raw.write(`event: ${PULL_OPEN_SSE_EVENT}\ndata: ${JSON.stringify({ stream: pull.id })}\n\n`);
    await new Promise<void>((done) => {
      request.raw.once('close', done);
      raw.once('close', done);
    });
    open = false;
    clearInterval(heartbeat);
    await pull.close().catch(() => {});
    raw.end();
    return undefined as never;
  });
  host.handle('answerDelivery', async ({ params, body }, call) => {
    const delivery = service.delivery;
    if (!delivery) throw conflict('no_runtime', 'This server delivers nothing (it runs without a dispatcher)');
    await deliveryForAnswer(db, await call.access(), params.delivery_id);
    await delivery.answerPulled(params.delivery_id, body);
    return deliveryNow(db, params.delivery_id);
  });
  host.handle('renewDeliveryLease', async ({ params }, call) => renewDeliveryLease(db, await call.access(), params.delivery_id));
  host.handle('createMessage', async ({ body }, call) => createMessage(db, await call.access(), body));
  host.handle('updateMessage', async ({ params, body }, call) => updateMessage(db, await call.access(), params.message_id, body));
  host.handle('appendMessageDelta', async ({ params, body }, call) => appendMessageDelta(db, await call.access(), params.message_id, body.delta, body.offset));
  host.handle('listMessages', async ({ query }, call) => listMessages(db, await call.access(), query));
  host.handle('getConversationPage', async ({ params, query }, call) => readConversationPage(db, await call.access(), params.task_id, query));
  host.handle('getMessage', async ({ params }, call) => getMessage(db, await call.access(), params.message_id));
  host.handle('listTrackers', async ({ query }, call) => listTrackers(db, await call.access(), query));
  host.handle('getTracker', async ({ params }, call) => getTracker(db, await call.access(), params.tracker_id));
  host.handle('updateTracker', async ({ params, body }, call) => updateTracker(db, await call.access(), params.tracker_id, body));

  // Server-Sent Events. Everything that can fail with a status (auth, 404, a bad Last-Event-ID)
  // happens before the response starts; after that the reply is raw.
  host.handle('streamTask', async ({ params, query }, call) => {
    const lastEventId = parseLastEventId(call.request.headers['last-event-id']);
    const after = lastEventId ?? query.after_sequence_id;
    const taskId = params.task_id;
    const start = await openStream(db, await call.access(), taskId);

    const reply = call.reply;
    reply.hijack();
    const raw = reply.raw;
    raw.writeHead(200, {
      'content-type': 'text/event-stream; charset=utf-8',
      'cache-control': 'no-cache',
      connection: 'keep-alive',
      'x-accel-buffering': 'no',
      'x-request-id': call.request.id,
    });
    raw.flushHeaders();
    const stop = new AbortController();
    raw.on('close', () => stop.abort());
    // The hub says when this reader fell too far behind (it stopped reading): the stream ends, and the
    // client resumes with Last-Event-ID. Nothing is written while the socket has not drained.
    const behind = new AbortController();
    const heartbeatMs = service.config.streamHeartbeatMs ?? STREAM_HEARTBEAT_MS;
    const heartbeat = setInterval(() => raw.writableNeedDrain || raw.write(': heartbeat\n\n'), heartbeatMs);
    try {
      // Resumed past the terminal record: nothing more will come.
      if (!(start.terminal && after >= start.lastSequenceId)) {
        // Flushed as soon as the hub has nothing more to hand over: a delta's frame leaves before the
        // writer's request has finished (its answer, hooks and span), not at the next tick after it.
        const flush = () => raw.socket?.uncork();
        for await (const record of service.streamHub.watch(taskId, after, { signal: stop.signal, onBehind: () => behind.abort(), onIdle: flush })) {
          if (!raw.write(sseFrame(record))) await drained(raw, behind.signal);
          if (endsStream(record) || behind.signal.aborted) break;
        }
      }
    } catch (error) {
      call.request.log.error({ err: error }, 'task stream failed');
    } finally {
      clearInterval(heartbeat);
      raw.end();
      // A reader that does not take even the end within a heartbeat's time is cut off, so its
      // connection does not hold the frames still queued for it.
      if (behind.signal.aborted && !raw.writableFinished) {
        const cut = setTimeout(() => raw.destroy(), heartbeatMs);
        cut.unref();
        raw.once('close', () => clearTimeout(cut));
      }
    }
    return undefined as never;
  });
}

/** The socket took what was written, the connection closed, or `signal` gave up waiting. */
function drained(raw: ServerResponse, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      raw.removeListener('drain', done);
      raw.removeListener('close', done);
      signal.removeEventListener('abort', done);
      resolve();
    };
    raw.once('drain', done);
    raw.once('close', done);
    if (signal.aborted) done();
    else signal.addEventListener('abort', done, { once: true });
  });
}

const sseFrame = (record: StreamRecord) => `id: ${record.sequence_id}\nevent: ${record.kind}\ndata: ${JSON.stringify(record.data)}\n\n`;

function parseLastEventId(header: string | string[] | undefined): number | undefined {
  if (header === undefined) return undefined;
  const value = Array.isArray(header) ? header[0] : header;
  if (value === undefined || !/^\d{1,15}$/.test(value.trim())) {
    throw invalid(['header', 'last-event-id'], 'Last-Event-ID must be a sequence_id (a non-negative integer)');
  }
  return Number(value.trim());
}
