import { SESSION_COOKIE } from '../../contract/console.js';
import { access, createSignInToken, describeSession, endSession, signIn } from '../domain/sessions.js';
import { forbidden } from '../domain/errors.js';
import type { Call, RouteHost, ServiceContext } from '../route-host.js';

/** The session cookie: never readable by script, never sent by another site's request, Secure over https. */
function sessionCookie(call: Call, token: string, maxAgeSeconds: number): string {
  const secure = call.request.protocol === 'https' ? '; Secure' : '';
  return `${SESSION_COOKIE}=${token}; Path=/; HttpOnly; SameSite=Strict; Max-Age=${maxAgeSeconds}${secure}`;
}

export function registerSessionRoutes(host: RouteHost, service: ServiceContext): void {
  const db = service.store.db;
  host.handle('createSession', async ({ body }, call) => {
    // A sign-in from another site's page (login CSRF) is refused: browsers send Origin on a POST.
    const origin = call.request.headers.origin;
    if (origin !== undefined && origin !== `${call.request.protocol}://${call.request.host}`)
      throw forbidden(`Sign-in from another origin (${origin}) is refused: open the console on this server`);
    const { session, token } = await signIn(db, service.auth, body, call.request.headers['user-agent'] ?? '');
    const seconds = Math.max(0, Math.floor((Date.parse(session.expires_at) - Date.now()) / 1000));
    call.reply.header('set-cookie', sessionCookie(call, token, seconds));
    call.reply.header('cache-control', 'no-store');
    return session;
  });
  host.handle('getSession', async (_input, call) => {
    call.reply.header('cache-control', 'no-store');
    return describeSession(db, await call.access(), call.request.consoleSession);
  });
  host.handle('deleteSession', async (_input, call) => {
    const ended = await endSession(db, call.request.consoleSession);
    call.reply.header('set-cookie', sessionCookie(call, '', 0));
    return ended;
  });
  host.handle('createSignInToken', async (_input, call) => createSignInToken(db, call.actor));
  host.handle('getAccess', async ({ query }, call) => access(db, await call.access(), query.agent_id));
}
