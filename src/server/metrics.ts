import { Counter, Gauge, Histogram, Registry } from 'prom-client';

/** Request latency buckets in seconds: 1 ms to 10 s. */
const LATENCY_BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** Counts of a connection pool, read at scrape time (pg's Pool has exactly these). */
export interface PoolCounts {
  totalCount: number;
  idleCount: number;
  waitingCount: number;
}

/** One sample of a gauge added with `addGauge`: its labels and value. */
export interface GaugeSample {
  labels?: Record<string, string>;
  value: number;
}

export interface GaugeHook {
  /** `agentctl_...` snake_case, e.g. `agentctl_delivery_queue_depth`. */
  name: string;
  help: string;
  labelNames?: readonly string[];
  /** Called at each scrape (keep it to one cheap query); its samples replace the previous ones. */
  collect: () => Promise<GaugeSample[]> | GaugeSample[];
}

/**
 * The service's Prometheus metrics, one registry per app (tests run several in one process), exposed
 * by `GET /metrics` and `--metrics-port`. The request metrics and DB pool use are built in; other
 * parts of the server add their numbers as scrape-time gauges with `addGauge` (delivery queue depth
 * and age, running agent processes by status), e.g.
 * `service.metrics.addGauge({ name: 'agentctl_delivery_queue_depth', help: '...', collect: async () => [{ value: n }] })`.
 */
export class ServiceMetrics {
  readonly registry = new Registry();
  private readonly requests = new Counter({
    name: 'agentctl_http_requests_total',
    help: 'HTTP requests answered, by method, route template and status',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [this.registry],
  });
  private readonly latency = new Histogram({
    name: 'agentctl_http_request_duration_seconds',
    help: 'Time to answer an HTTP request, by method, route template and status',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: LATENCY_BUCKETS,
    registers: [this.registry],
  });

  /** Records one answered request; `route` is the template (`/tasks/:task_id`), never the raw URL. */
  observeRequest(method: string, route: string, status: number, seconds: number): void {
    const labels = { method, route, status: String(status) };
    this.requests.inc(labels);
    this.latency.observe(labels, seconds);
  }

  /** Database pool use (PostgreSQL); PGlite has one connection and no pool. */
  watchPool(pool: PoolCounts): void {
    this.addGauge({
      name: 'agentctl_db_pool_connections',
      help: 'Database pool connections by state (total, idle, waiting = requests queued for one)',
      labelNames: ['state'],
      collect: () => [
        { labels: { state: 'total' }, value: pool.totalCount },
        { labels: { state: 'idle' }, value: pool.idleCount },
        { labels: { state: 'waiting' }, value: pool.waitingCount },
      ],
    });
  }

  /** Adds a gauge computed at scrape time. */
  addGauge(hook: GaugeHook): void {
    new Gauge({
      name: hook.name,
      help: hook.help,
      labelNames: hook.labelNames ?? [],
      registers: [this.registry],
      async collect() {
        const samples = await hook.collect();
        this.reset();
        for (const sample of samples) {
          if (sample.labels) this.set(sample.labels, sample.value);
          else this.set(sample.value);
        }
      },
    });
  }

  /** The exposition text and its content type. */
  async expose(): Promise<{ contentType: string; text: string }> {
    return { contentType: this.registry.contentType, text: await this.registry.metrics() };
  }
}
