import { beforeEach, describe, expect, test } from 'vitest';
import { startServer } from '../../src/server/main.js';
import { scopedKey } from '../support/scoped-key.js';
import { createTask, deployActive } from '../support/fixtures.js';
import { createTestDatabase, engines, useService } from '../support/service.js';

describe.each(engines)('request log and metrics (%s)', (engine) => {
  const lines: string[] = [];
  const svc = useService(engine, {}, { logger: { level: 'info', stream: { write: (line: string) => lines.push(line) } } });
  beforeEach(async () => {
    lines.length = 0;
  });

  const logged = () => lines.map((line) => JSON.parse(line));

  test('one JSON line per request: request id, route, status, duration and key id, never the key', async () => {
    const whoami = await svc.api('GET', '/whoami');
    const missing = await svc.api('GET', '/tasks/task_nope');
    const entries = logged();
    expect(entries).toHaveLength(2);
    expect(entries[0]).toMatchObject({
      level: 30,
      msg: 'request',
      reqId: whoami.headers.get('x-request-id'),
      method: 'GET',
      route: '/whoami',
      path: '/whoami',
      status: 200,
      key_id: whoami.body.id,
    });
    expect(entries[1]).toMatchObject({
      reqId: missing.headers.get('x-request-id'),
      route: '/tasks/:task_id',
      path: '/tasks/task_nope',
      status: 404,
      key_id: whoami.body.id,
    });
    expect(typeof entries[0].duration_ms).toBe('number');
    expect(lines.join('')).not.toContain(svc.adminKey);
  });

  test('a request without a valid key is logged with a null key id', async () => {
    await svc.api('GET', '/whoami', { key: 'ak_not_a_key' });
    expect(logged()).toEqual([expect.objectContaining({ route: '/whoami', status: 401, key_id: null })]);
    expect(lines.join('')).not.toContain('ak_not_a_key');
  });

  test('GET /metrics gives org admins request counts and latency histograms by route and status', async () => {
    // The registry lives as long as the app: earlier tests' requests are counted too.
    const sample = (text: string, series: string) => Number(new RegExp(`^${series.replace(/[{}."/+]/g, '\\$&')} (\\d+)$`, 'm').exec(text)?.[1] ?? 0);
    const count = 'agentctl_http_requests_total{method="GET",route="/whoami",status="200"}';
    const bucket = 'agentctl_http_request_duration_seconds_bucket{le="10",method="GET",route="/whoami",status="200"}';
    const before = (await svc.api('GET', '/metrics')).body as string;
    await svc.api('GET', '/whoami');
    await svc.api('GET', '/whoami');
    const res = await fetch(`${svc.url}/metrics`, { headers: { authorization: `Bearer ${svc.adminKey}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    expect(sample(text, count)).toBe(sample(before, count) + 2);
    expect(sample(text, bucket)).toBe(sample(before, bucket) + 2);
    expect(sample(text, count)).toBeGreaterThanOrEqual(2);
    if (engine === 'postgres') expect(text).toMatch(/agentctl_db_pool_connections\{state="total"\} \d+/);
    else expect(text).not.toContain('agentctl_db_pool_connections');
    // PostgreSQL runs its own autovacuum; PGlite's is the server's (its passes come every minute).
    if (engine === 'pglite') expect(text).toMatch(/^agentctl_embedded_vacuum_tables\{action="vacuum"\} \d+$/m);
    else expect(text).not.toContain('agentctl_embedded_vacuum');
  });

  test('GET /metrics is 401 without a key and 403 for a key that is not an org admin', async () => {
    expect((await svc.api('GET', '/metrics', { key: null })).status).toBe(401);
    const viewer = await scopedKey(svc, []);
    const res = await svc.api('GET', '/metrics', { key: viewer });
    expect(res.status).toBe(403);
    expect(res.body).toEqual({ code: 'forbidden', detail: 'Only org admins may read the metrics' });
  });

  test('a gauge added with addGauge is collected at each scrape', async () => {
    let depth = 3;
    svc.metrics.addGauge({
      name: `agentctl_test_queue_depth_${engine}`,
      help: 'Test gauge',
      labelNames: ['queue'],
      collect: () => [{ labels: { queue: 'events' }, value: depth }],
    });
    const scrape = async () => (await svc.api('GET', '/metrics')).body as string;
    expect(await scrape()).toContain(`agentctl_test_queue_depth_${engine}{queue="events"} 3`);
    depth = 5;
    expect(await scrape()).toContain(`agentctl_test_queue_depth_${engine}{queue="events"} 5`);
  });

  test('GET /metrics shows deliveries waiting for an agent: depth by status and the age of the oldest; no agent processes without a runtime', async () => {
    await deployActive(svc);
    await createTask(svc);
    await createTask(svc);
    const text = (await svc.api('GET', '/metrics')).body as string;
    expect(text).toContain('agentctl_delivery_queue_depth{status="pending"} 2\n');
    expect(text).toContain('agentctl_delivery_queue_depth{status="leased"} 0\n');
    const age = Number(/^agentctl_delivery_oldest_age_seconds (\S+)$/m.exec(text)?.[1]);
    expect(age).toBeGreaterThan(0);
    expect(age).toBeLessThan(60);
    expect(text).toContain('# TYPE agentctl_agent_processes gauge\n');
    expect(text).not.toMatch(/^agentctl_agent_processes\{/m);
  });

  test('--metrics-port serves GET /metrics without a key, and nothing else', async () => {
    const database = engine === 'postgres' ? await createTestDatabase() : undefined;
    const server = await startServer({ port: 0, metricsPort: 0, databaseUrl: database?.url });
    try {
      await fetch(`${server.url}/healthz`);
      const res = await fetch(`${server.metricsUrl}/metrics`);
      expect(res.status).toBe(200);
      expect(await res.text()).toContain('agentctl_http_requests_total{method="GET",route="/healthz",status="200"} 1');
      expect((await fetch(`${server.metricsUrl}/whoami`)).status).toBe(404);
    } finally {
      await server.close();
      await database?.drop();
    }
  });
});
