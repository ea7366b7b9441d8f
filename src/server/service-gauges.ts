// The part-two gauges of GET /metrics, computed at scrape time: the delivery queue (depth by status
// and the age of its oldest entry), the agent processes the runtime driver runs, by phase, and on
// PGlite what its embedded autovacuum did (store/vacuum.ts).
import type { ServiceContext } from './route-host.js';
import { deliveryQueueStats } from './domain/deliveries.js';

export function watchServiceGauges(service: ServiceContext): void {
  // Both delivery gauges come from one query per scrape.
  let pending: ReturnType<typeof deliveryQueueStats> | undefined;
  const stats = () => {
    pending ??= deliveryQueueStats(service.store.db).finally(() => {
      pending = undefined;
    });
    return pending;
  };
  service.metrics.addGauge({
    name: 'agentctl_delivery_queue_depth',
    help: 'Deliveries not yet done, by status (pending, in_flight, leased)',
    labelNames: ['status'],
    collect: async () => Object.entries((await stats()).open).map(([status, value]) => ({ labels: { status }, value })),
  });
  service.metrics.addGauge({
    name: 'agentctl_delivery_oldest_age_seconds',
    help: 'Seconds since the oldest delivery not yet done was created (0 when the queue is empty)',
    collect: async () => [{ value: (await stats()).oldestAgeSeconds }],
  });
  const vacuum = service.store.vacuum;
  if (vacuum) {
    service.metrics.addGauge({
      name: 'agentctl_embedded_vacuum_passes',
      help: 'Passes of the embedded database autovacuum since the server started (PGlite only)',
      collect: () => [{ value: vacuum.tally.passes }],
    });
    service.metrics.addGauge({
      name: 'agentctl_embedded_vacuum_tables',
      help: 'Tables the embedded database autovacuum vacuumed or analyzed since the server started, by action (PGlite only)',
      labelNames: ['action'],
      collect: () => [
        { labels: { action: 'vacuum' }, value: vacuum.tally.vacuumed },
        { labels: { action: 'analyze' }, value: vacuum.tally.analyzed },
      ],
    });
  }
  service.metrics.addGauge({
    name: 'agentctl_agent_processes',
    help: 'Agent replicas this server runs, by phase (no samples with --runtime none)',
    labelNames: ['runtime', 'phase'],
    collect: () => {
      const driver = service.runtime;
      if (!driver) return [];
      const byPhase = new Map<string, number>();
      for (const versionId of driver.running()) {
        for (const replica of driver.status(versionId)?.replicas ?? []) byPhase.set(replica.phase, (byPhase.get(replica.phase) ?? 0) + 1);
      }
      return [...byPhase].map(([phase, value]) => ({ labels: { runtime: driver.name, phase }, value }));
    },
  });
}
