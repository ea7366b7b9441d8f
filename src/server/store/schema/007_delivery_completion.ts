import type { Kysely } from 'kysely';
import { runScript } from './script.js';

/**
 * An async delivery stays `leased` to the replica that acknowledged it (leased_to, its acp_url)
 * until the agent reports its handler finished, the replica goes, or the lease (lease_ms from the
 * last renewal, ending at claimed_until) runs out.
 */
export const script = /* sql */ `
ALTER TABLE deliveries DROP CONSTRAINT deliveries_status_check;
ALTER TABLE deliveries ADD CONSTRAINT deliveries_status_check CHECK (status IN ('pending','in_flight','leased','done','failed'));
ALTER TABLE deliveries ADD COLUMN leased_to text;
ALTER TABLE deliveries ADD COLUMN lease_ms integer;
DROP INDEX deliveries_open;
CREATE INDEX deliveries_open ON deliveries (task_id, id) WHERE status IN ('pending','in_flight','leased');
CREATE INDEX deliveries_leased ON deliveries (version_id, leased_to) WHERE status = 'leased';
`;

export const up = (db: Kysely<unknown>) => runScript(db, script);
