// The web console's sign-in (issue 25): a session the server keeps, tied to the API key that opened
// it. The browser holds only an HttpOnly cookie; state-changing requests made with that cookie
// carry the session's CSRF token in a header. Plain constants here are read by the server, the
// client and the console alike.
import { z } from 'zod';
import { Timestamp } from './common.js';
import { Whoami } from './resources.js';

export {
  SESSION_COOKIE,
  CSRF_HEADER,
  CONSOLE_PATH,
  SESSION_HOURS,
  SIGN_IN_TOKEN_SECONDS,
  AGENT_PERMISSIONS,
  type AgentPermission,
} from './console-constants.js';
import { AGENT_PERMISSIONS } from './console-constants.js';

export const CreateSessionRequest = z
  .object({
    /** An API key, sent once: the session stands in for it from here on. */
    api_key: z.string().min(1).max(200).optional(),
    /** A one-time sign-in token from `POST /sessions/sign-in-tokens` (`agentctl open`). */
    token: z.string().min(1).max(200).optional(),
  })
  .meta({ id: 'CreateSessionRequest' });

export const ConsoleSession = z
  .object({
    id: z.string(),
    /** The key the session acts as: its permissions are the session's. */
    key: Whoami,
    /** The key is an admin of its org (it may manage keys and groups). */
    org_admin: z.boolean(),
    /** Send it back in the `X-CSRF-Token` header of every state-changing request. */
    csrf_token: z.string(),
    created_at: Timestamp,
    expires_at: Timestamp,
  })
  .meta({ id: 'ConsoleSession' });
export type ConsoleSession = z.infer<typeof ConsoleSession>;

export const SignInToken = z
  .object({
    token: z.string(),
    expires_at: Timestamp,
    /** The console page that signs in with it: `/console/sign-in?token=...`. */
    path: z.string(),
  })
  .meta({ id: 'SignInToken' });

export const AccessQuery = z.object({ agent_id: z.string().min(1).max(255).optional() });
export const Access = z
  .object({
    org_admin: z.boolean(),
    /** The key's permissions on the agent asked about (404 when it may not discover it). */
    agent: z.object({ id: z.string(), permissions: z.array(z.enum(AGENT_PERMISSIONS)) }).nullable(),
  })
  .meta({ id: 'Access' });
export type Access = z.infer<typeof Access>;
