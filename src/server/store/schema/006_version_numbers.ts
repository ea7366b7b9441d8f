import type { Kysely } from 'kysely';
import { runScript } from './script.js';

/**
 * Every version gets a number per agent in deploy order (v1, v2, ...), existing ones by
 * deployed_at; agents.last_version_number is the counter a deploy increments under the row lock.
 */
export const script = /* sql */ `
ALTER TABLE agents ADD COLUMN last_version_number integer NOT NULL DEFAULT 0;
ALTER TABLE versions ADD COLUMN number integer;
UPDATE versions SET number = numbered.n
  FROM (SELECT id, row_number() OVER (PARTITION BY agent_id ORDER BY deployed_at, id)::int AS n FROM versions) AS numbered
  WHERE versions.id = numbered.id;
UPDATE agents SET last_version_number = COALESCE((SELECT max(number) FROM versions WHERE versions.agent_id = agents.id), 0);
ALTER TABLE versions ALTER COLUMN number SET NOT NULL;
CREATE UNIQUE INDEX versions_agent_number ON versions (agent_id, number);
CREATE INDEX versions_agent_git_hash ON versions (agent_id, lower(git_hash) text_pattern_ops);
`;

export const up = (db: Kysely<unknown>) => runScript(db, script);
