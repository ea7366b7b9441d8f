import type { Kysely } from 'kysely';
import { runScript } from './script.js';

/**
 * The web console's sign-in (issue 25). A session is a server-side record tied to the API key that
 * opened it: the browser holds only the session's random token (an HttpOnly cookie), the database
 * its SHA-256 (the CSRF token is derived from it). Revoking the key ends every session it opened (each
 * request reads the key with the session); deleting the key row removes them.
 * A sign-in token is what `agentctl open` makes with the profile's key: used once, within minutes.
 */
export const script = /* sql */ `
CREATE TABLE console_sessions (
  id text PRIMARY KEY,
  key_id text NOT NULL REFERENCES api_keys(id) ON DELETE CASCADE,
  token_hash text NOT NULL UNIQUE,
  user_agent text NOT NULL DEFAULT '',
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  ended_at timestamptz
);
CREATE INDEX console_sessions_key_idx ON console_sessions (key_id);
CREATE TABLE console_sign_in_tokens (
  token_hash text PRIMARY KEY,
  key_id text NOT NULL REFERENCES api_keys(id) ON DELETE CASCADE,
  created_at timestamptz NOT NULL DEFAULT now(),
  expires_at timestamptz NOT NULL,
  used_at timestamptz
);
`;

export const up = (db: Kysely<unknown>) => runScript(db, script);
