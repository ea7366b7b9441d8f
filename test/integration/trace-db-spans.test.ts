import { context } from '@opentelemetry/api';
import { afterAll, beforeAll, describe, expect, test, vi } from 'vitest';
import { sql } from 'kysely';
import { openStore, type Store } from '../../src/server/store/db.js';
import { Tracing } from '../../src/server/tracing/tracing.js';
import { createTestDatabase } from '../support/service.js';

const engines = ['pglite', ...(process.env.TEST_DATABASE_URL ? ['postgres'] : [])] as const;

interface Row {
  span_id: string;
  parent_span_id: string | null;
  name: string;
  kind: string;
  status: string;
  status_message: string | null;
  attributes: Record<string, unknown>;
}

// README "Traces": the database work of a traced request is one span per transaction (its
// statements counted), and one span per statement run outside a transaction; work outside a
// traced span makes none.
describe.each(engines)('database spans on %s', (engine) => {
  let store: Store;
  let tracing: Tracing;
  let drop: (() => Promise<void>) | undefined;

  beforeAll(async () => {
    const database = engine === 'postgres' ? await createTestDatabase(process.env.TEST_DATABASE_URL, 'agentctl_dbspans') : undefined;
    drop = database?.drop;
    store = await openStore({ databaseUrl: database?.url });
    tracing = await Tracing.start(store.db, { env: {} });
  });
  afterAll(async () => {
    await tracing.close();
    await store.close();
    await drop?.();
  });

  /** Runs `fn` in a traced request span of org `org_test`; the spans of its trace, once written. */
  const traced = async (fn: () => Promise<unknown>): Promise<{ request: string; spans: Row[] }> => {
    const parent = tracing.contextFrom(null);
    let request = '';
    let traceId = '';
    await tracing
      .inSpan(parent, 'POST /test', {}, async (span) => {
        request = span.spanContext().spanId;
        traceId = span.spanContext().traceId;
        tracing.note(traceId, { orgId: 'org_test' });
        await fn();
      })
      .catch(() => {});
    await tracing.flush();
    const rows = await sql<Row>`
      SELECT span_id, parent_span_id, name, kind, status, status_message, attributes FROM trace_spans
      WHERE trace_id = ${traceId} AND name <> 'POST /test' ORDER BY start_us, id`.execute(store.db);
    return { request, spans: rows.rows };
  };

  test('a transaction of three statements is one span under the request, its statements counted and named in order', async () => {
    const { request, spans } = await traced(() =>
      store.db.transaction().execute(async (trx) => {
        await sql`SELECT 1`.execute(trx);
        await sql`UPDATE orgs SET name = name WHERE false`.execute(trx);
        await sql`WITH x AS (INSERT INTO trace_spans (org_id, trace_id, span_id, name, kind, service, start_us, end_us, status) SELECT 'o', 't', 's', 'n', 'k', 's', 0, 0, 'unset' WHERE false RETURNING 1) SELECT count(*) FROM x`.execute(
          trx,
        );
      }),
    );
    expect(spans).toEqual([
      {
        span_id: expect.stringMatching(/^[0-9a-f]{16}$/),
        parent_span_id: request,
        name: 'db transaction',
        kind: 'client',
        status: 'unset',
        status_message: null,
        attributes: { 'db.system.name': 'postgresql', 'db.query.summary': 'SELECT UPDATE INSERT', 'agentctl.db.statements': 3 },
      },
    ]);
  });

  test('a statement outside a transaction is a span of its own, with its text', async () => {
    const { request, spans } = await traced(() => sql`SELECT count(*) FROM orgs`.execute(store.db));
    expect(spans).toEqual([
      {
        span_id: expect.stringMatching(/^[0-9a-f]{16}$/),
        parent_span_id: request,
        name: 'db SELECT',
        kind: 'client',
        status: 'unset',
        status_message: null,
        attributes: { 'db.system.name': 'postgresql', 'db.operation.name': 'SELECT', 'db.query.text': 'SELECT count(*) FROM orgs' },
      },
    ]);
  });

  test("a statement's span is made once its caller went on with the result, with the statement's own times", async () => {
    const made = vi.spyOn(tracing.tracer, 'startSpan');
    const statementSpans = () => made.mock.calls.filter(([name]) => name === 'db SELECT');
    try {
      let madeWhenAnswered = -1;
      let sent = 0;
      let answered = 0;
      // The spans' clock (db-spans.ts: the process's monotonic clock from its time origin, as
      // OpenTelemetry's): Date.now() is the wall clock, which a clock adjustment moved 28-34 ms away
      // from it in one CI run.
      const now = () => performance.timeOrigin + performance.now();
      const { spans } = await traced(async () => {
        sent = now();
        await sql`SELECT 1`.execute(store.db);
        answered = now();
        // What waited on the statement (a streamed delta on its way to its readers) runs before its span is made.
        madeWhenAnswered = statementSpans().length;
      });
      expect(madeWhenAnswered).toBe(0);
      expect(statementSpans()).toHaveLength(1);
      expect(spans.map((s) => s.name)).toEqual(['db SELECT']);
      const [, options] = statementSpans()[0]!;
      expect(Number(options?.startTime)).toBeGreaterThanOrEqual(sent - 1);
      expect(Number(options?.startTime)).toBeLessThanOrEqual(answered + 1);
    } finally {
      made.mockRestore();
    }
  });

  test('a transaction that fails is marked failed with the statement’s error', async () => {
    const { spans } = await traced(() =>
      store.db.transaction().execute(async (trx) => {
        await sql`SELECT 1`.execute(trx);
        await sql`SELECT * FROM no_such_table`.execute(trx);
      }),
    );
    expect(
      spans.map((s) => ({ name: s.name, status: s.status, status_message: s.status_message, statements: s.attributes['agentctl.db.statements'] })),
    ).toEqual([{ name: 'db transaction', status: 'error', status_message: 'rolled back: relation "no_such_table" does not exist', statements: 2 }]);
  });

  test('database work outside a traced span makes no spans', async () => {
    const made = vi.spyOn(tracing.tracer, 'startSpan');
    try {
      const work = async () => {
        await store.db.transaction().execute((trx) => sql`SELECT 1`.execute(trx));
        await sql`SELECT 1`.execute(store.db);
      };
      await work();
      // Under the server's tracing but no span (the dispatcher between deliveries).
      await context.with(tracing.contextFrom(null), work);
      expect(made).not.toHaveBeenCalled();
    } finally {
      made.mockRestore();
    }
  });
});
