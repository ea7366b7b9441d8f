import type { Kysely } from 'kysely';
import { runScript } from './script.js';

/**
 * Wire details of the upstream API: a version's CPU and memory requests and limits (null: the
 * runtime's defaults), and who created a namespace or a sharing group (null for older rows and for
 * the namespace made at first start).
 */
export const script = /* sql */ `
ALTER TABLE versions ADD COLUMN resources jsonb;
ALTER TABLE namespaces ADD COLUMN created_by_key_id text REFERENCES api_keys(id);
ALTER TABLE groups ADD COLUMN created_by_key_id text REFERENCES api_keys(id);
`;

export const up = (db: Kysely<unknown>) => runScript(db, script);
