import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { CompletionCarriage, CompletionReporter, type CompletionReport } from '../../src/adk/completions.js';
import { createAdk } from '../../src/adk/adk.js';
import { ConflictError } from '../../src/adk/errors.js';

/** A promise and its resolvers, for answers a test releases when it wants. */
function deferred<T>() {
  let resolve!: (value: T) => void;
  let reject!: (error: unknown) => void;
  const promise = new Promise<T>((res, rej) => {
    resolve = res;
    reject = rej;
  });
  return { promise, resolve, reject };
}

/** A wire whose every request waits until the test answers it. */
function heldWire() {
  const sent: { ids: string[]; answer: ReturnType<typeof deferred<(Error | undefined)[]>> }[] = [];
  const wire = {
    one: (report: CompletionReport) => {
      const answer = deferred<(Error | undefined)[]>();
      sent.push({ ids: [report.deliveryId], answer });
      return answer.promise.then(([error]) => {
        if (error) throw error;
      });
    },
    many: (reports: CompletionReport[]) => {
      const answer = deferred<(Error | undefined)[]>();
      sent.push({ ids: reports.map((r) => r.deliveryId), answer });
      return answer.promise;
    },
  };
  return { sent, wire };
}

const settled = (promise: Promise<unknown>) =>
  promise.then(
    () => 'completed',
    (error: Error) => `refused: ${error.message}`,
  );

describe('CompletionReporter', () => {
  it('sends a lone completion at once, and those that finish while it is on its way together when it returns', async () => {
    const { sent, wire } = heldWire();
    const reporter = new CompletionReporter(wire);
    const first = reporter.report({ deliveryId: '1' });
    // No timer: it is on the wire before anything else runs.
    expect(sent.map((s) => s.ids)).toEqual([['1']]);
    const later = ['2', '3', '4'].map((id) => reporter.report({ deliveryId: id }));
    expect(sent).toHaveLength(1);
    sent[0].answer.resolve([undefined]);
    await first;
    await new Promise((resolve) => setImmediate(resolve));
    expect(sent.map((s) => s.ids)).toEqual([['1'], ['2', '3', '4']]);
    // Each answered on its own: one refused, the others completed.
    sent[1].answer.resolve([undefined, new Error('not sent yet'), undefined]);
    expect(await Promise.all(later.map(settled))).toEqual(['completed', 'refused: not sent yet', 'completed']);
    // Nothing on its way again: the next one goes at once, alone.
    void reporter.report({ deliveryId: '5' });
    expect(sent.at(-1)!.ids).toEqual(['5']);
  });

  it('a request that fails as a whole fails each of its completions, and the next ones still go', async () => {
    const { sent, wire } = heldWire();
    const reporter = new CompletionReporter(wire);
    const first = settled(reporter.report({ deliveryId: '1' }));
    const second = settled(reporter.report({ deliveryId: '2' }));
    const third = settled(reporter.report({ deliveryId: '3' }));
    sent[0].answer.reject(new Error('connection refused'));
    expect(await first).toBe('refused: connection refused');
    await new Promise((resolve) => setImmediate(resolve));
    expect(sent.map((s) => s.ids)).toEqual([['1'], ['2', '3']]);
    sent[1].answer.reject(new Error('server away'));
    expect([await second, await third]).toEqual(['refused: server away', 'refused: server away']);
  });

  it('spans too large for one request go in the next', async () => {
    const { sent, wire } = heldWire();
    const reporter = new CompletionReporter(wire);
    const span = { trace_id: 'a'.repeat(32), span_id: 'b'.repeat(16), parent_span_id: null, name: 'x'.repeat(200), start_time_us: 0, end_time_us: 1 };
    // About 300 KiB of spans each: two of them do not fit one request beside each other.
    const heavy = () => Array.from({ length: 1000 }, () => span);
    void reporter.report({ deliveryId: '1' });
    for (const id of ['2', '3', '4']) void reporter.report({ deliveryId: id, spans: heavy() }).catch(() => {});
    sent[0].answer.resolve([undefined]);
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(sent.map((s) => s.ids)).toEqual([['1'], ['2']]);
    sent[1].answer.resolve([undefined]);
    await new Promise((resolve) => setTimeout(resolve, 10));
    expect(sent.map((s) => s.ids)).toEqual([['1'], ['2'], ['3']]);
  });
});

describe('Adk.completeDelivery', () => {
  let server: Server | undefined;
  afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

  /** A service whose single completion waits for `release`; `batch` false answers as a server from before the batch endpoint. */
  async function service(batch: boolean) {
    const requests: { path: string; body: any }[] = [];
    const release = deferred<void>();
    server = createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', async () => {
        const path = req.url ?? '';
        const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : undefined;
        requests.push({ path, body });
        const delivery = (id: string) => ({ id, task_id: 'task_1', method: 'event/send', status: 'done', attempts: 1, lease_expires_at: null });
        res.setHeader('content-type', 'application/json');
        const single = /^\/deliveries\/(\d+)\/complete$/.exec(path);
        if (single) {
          if (single[1] === '1') await release.promise;
          return res.end(JSON.stringify(delivery(single[1])));
        }
        if (path === '/deliveries/complete' && batch) {
          const results = body.deliveries.map(({ id }: { id: string }) =>
            id === '3'
              ? { id, status: 409, delivery: null, error: { detail: `Delivery ${id} has not been sent to the agent yet`, code: 'delivery_not_sent' } }
              : { id, status: 200, delivery: delivery(id), error: null },
          );
          return res.end(JSON.stringify({ results }));
        }
        res.statusCode = 404;
        res.end(JSON.stringify({ detail: `No route POST ${path}`, code: 'not_found' }));
      });
    });
    await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
    const adk = createAdk({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, apiKey: 'agk_test', retries: 0 });
    return { adk, requests, release };
  }

  const reportAll = async (adk: ReturnType<typeof createAdk>, release: { resolve: () => void }, requests: unknown[]) => {
    const first = adk.completeDelivery('1');
    while (requests.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    const later = ['2', '3', '4'].map((id) => settled(adk.completeDelivery(id)));
    release.resolve();
    await first;
    return Promise.all(later);
  };

  it('reports those that finished while one was on its way in one POST /deliveries/complete, each refusal its own error', async () => {
    const { adk, requests, release } = await service(true);
    const outcome = await reportAll(adk, release, requests);
    expect(requests).toEqual([
      { path: '/deliveries/1/complete', body: undefined },
      { path: '/deliveries/complete', body: { deliveries: [{ id: '2' }, { id: '3' }, { id: '4' }] } },
    ]);
    expect(outcome).toEqual(['completed', 'refused: Delivery 3 has not been sent to the agent yet', 'completed']);
  });

  it('a server without the batch endpoint gets each on its own, from then on', async () => {
    const { adk, requests, release } = await service(false);
    const outcome = await reportAll(adk, release, requests);
    expect(outcome).toEqual(['completed', 'completed', 'completed']);
    expect(requests.map((r) => r.path)).toEqual([
      '/deliveries/1/complete',
      '/deliveries/complete',
      '/deliveries/2/complete',
      '/deliveries/3/complete',
      '/deliveries/4/complete',
    ]);
  });

  it('a per-delivery refusal is the error class of its status', async () => {
    const { adk, requests, release } = await service(true);
    const first = adk.completeDelivery('1');
    while (requests.length === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    const refused = adk.completeDelivery('3').catch((error: unknown) => error);
    void adk.completeDelivery('2');
    release.resolve();
    await first;
    const error = await refused;
    expect(error).toBeInstanceOf(ConflictError);
    expect(error).toMatchObject({ status: 409, code: 'delivery_not_sent' });
  });
});

describe('CompletionCarriage', () => {
  const turnEnds = () => new Promise((resolve) => setImmediate(resolve));

  it('an answer written in the same turn of the event loop carries the waiting reports: no request of their own', async () => {
    const byRequest: string[] = [];
    const carriage = new CompletionCarriage(async (report) => void byRequest.push(report.deliveryId));
    const first = settled(carriage.report({ deliveryId: '1' }));
    const second = settled(carriage.report({ deliveryId: '2', spans: [] }));
    const carried = carriage.take()!;
    expect(carried.completed).toEqual([{ id: '1' }, { id: '2', spans: [] }]);
    // Nothing waits any more: the next answer carries nothing.
    expect(carriage.take()).toBeUndefined();
    carried.settle(true);
    expect([await first, await second]).toEqual(['completed', 'completed']);
    await turnEnds();
    expect(byRequest).toEqual([]);
  });

  it('a report no answer took by the end of the turn goes by request', async () => {
    const byRequest: string[] = [];
    const carriage = new CompletionCarriage(async (report) => void byRequest.push(report.deliveryId));
    const report = settled(carriage.report({ deliveryId: '7' }));
    expect(byRequest).toEqual([]);
    expect(await report).toBe('completed');
    expect(byRequest).toEqual(['7']);
    expect(carriage.take()).toBeUndefined();
  });

  it('reports carried by an answer that was not written go by request, and their refusal reaches the caller', async () => {
    const carriage = new CompletionCarriage(async (report) => {
      throw new Error(`refused ${report.deliveryId}`);
    });
    const report = settled(carriage.report({ deliveryId: '3' }));
    const carried = carriage.take()!;
    carried.settle(false);
    // Settled once: a later `true` (the close after an error) changes nothing.
    carried.settle(true);
    expect(await report).toBe('refused: refused 3');
  });

  it('a report whose spans are too large for an answer goes by request', async () => {
    const byRequest: string[] = [];
    const carriage = new CompletionCarriage(async (report) => void byRequest.push(report.deliveryId));
    const huge = Array.from({ length: 4 }, (_, i) => ({ name: 'x'.repeat(200 * 1024), i }));
    const report = settled(carriage.report({ deliveryId: '9', spans: huge as never }));
    expect(carriage.take()).toBeUndefined();
    expect(await report).toBe('completed');
    expect(byRequest).toEqual(['9']);
  });
});
