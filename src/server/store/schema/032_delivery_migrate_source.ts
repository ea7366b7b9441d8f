import type { Kysely } from 'kysely';
import { runScript } from './script.js';

/**
 * Retiring a drained version (settleDraining, domain/events.ts) asks whether an onMigrate hook
 * from it is still open. Without this index PostgreSQL answers by reading every open delivery
 * (the whole backlog of events) and filtering on method and payload; with it, a lookup by source.
 */
export const script = /* sql */ `
CREATE INDEX deliveries_open_migrate_source ON deliveries ((payload->'migration'->>'from_version_id'))
  WHERE method = 'task/migrate' AND status IN ('pending','in_flight','leased');
`;

export const up = (db: Kysely<unknown>) => runScript(db, script);
