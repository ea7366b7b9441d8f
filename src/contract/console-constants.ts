// The web console's plain facts, without zod: the server, the client and the console's bundle read them.

/** The session cookie: HttpOnly, SameSite=Strict, Secure over https, Path=/. */
export const SESSION_COOKIE = 'agentctl_session';
/** The header a cookie-authenticated POST, PUT, PATCH or DELETE must carry: the session's CSRF token. */
export const CSRF_HEADER = 'x-csrf-token';
/** Where the console lives on the server; a sign-in link is `/console/sign-in?token=...`. */
export const CONSOLE_PATH = '/console/';
/** How long a session lasts at most (it ends sooner with its key's expiry, revocation or a sign-out). */
export const SESSION_HOURS = 12;
/** How long a one-time sign-in link works. */
export const SIGN_IN_TOKEN_SECONDS = 120;

/** What a key may do on an agent (the policy's permissions; src/server/auth/policy.ts). */
export const AGENT_PERMISSIONS = ['discover', 'read', 'run', 'write', 'admin', 'write_task_data'] as const;
export type AgentPermission = (typeof AGENT_PERMISSIONS)[number];
