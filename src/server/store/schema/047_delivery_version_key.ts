import type { Kysely } from 'kysely';
import { runScript } from './script.js';

/**
 * Issue 20, the dispatcher's claim: a delivery's version is set when it is first claimed, from its
 * task's current version (itself a key to `versions`), and the foreign key on deliveries.version_id
 * checked that again on every first claim: a `SELECT ... FOR KEY SHARE` of the version row (a row
 * lock and its WAL record, on the one row every claim of that version shares; 0.1-0.3 ms a claim on
 * PostgreSQL in EXPLAIN ANALYZE). Versions are never deleted, so the key guarded nothing else.
 */
export const script = /* sql */ `
ALTER TABLE deliveries DROP CONSTRAINT deliveries_version_id_fkey;
`;

export const up = (db: Kysely<unknown>) => runScript(db, script);
