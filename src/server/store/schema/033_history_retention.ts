import type { Kysely } from 'kysely';
import { runScript } from './script.js';

/**
 * History retention (domain/history.ts): tasks.history_from_sequence is the first sequence a
 * rehearsal may start from. The sweep raises it as it prunes state_history and filesystem_history
 * below it; a rehearsal from an earlier sequence is refused rather than started from a wrong state.
 */
export const script = /* sql */ `
ALTER TABLE tasks ADD COLUMN history_from_sequence integer NOT NULL DEFAULT 0;
`;

export const up = (db: Kysely<unknown>) => runScript(db, script);
