import type { Kysely } from 'kysely';
import { runScript } from './script.js';

/**
 * The dispatcher's claim over every task (issue 20) walks the open deliveries in the order it takes
 * them (priority, then age) and stops once it has as many as it has room for, rather than reading
 * every open delivery and sorting them.
 */
export const script = /* sql */ `
CREATE INDEX deliveries_claim_order ON deliveries (priority DESC, id) WHERE status IN ('pending','in_flight','leased');
`;

export const up = (db: Kysely<unknown>) => runScript(db, script);
