import { describe, expect, test } from 'vitest';
import { engines, useService } from '../support/service.js';
import { scopedKey } from '../support/scoped-key.js';

/** The session cookie's value from a Set-Cookie header. */
const cookieOf = (headers: Headers) => /agentctl_session=([^;]*)/.exec(headers.get('set-cookie') ?? '')?.[1];

describe.each(engines)('web console sessions on %s', (engine) => {
  const svc = useService(engine);
  const signIn = async (body: unknown, headers: Record<string, string> = {}) => {
    const answer = await svc.api('POST', '/sessions', { body, key: null, headers });
    return { ...answer, cookie: cookieOf(answer.headers) };
  };
  const withCookie = (cookie: string, extra: Record<string, string> = {}) => ({ key: null, headers: { cookie: `agentctl_session=${cookie}`, ...extra } });

  test('signing in with a key sets an HttpOnly, SameSite=Strict cookie; the session acts as the key', async () => {
    const answer = await signIn({ api_key: svc.adminKey });
    expect(answer.status).toBe(201);
    const [, maxAge] = /^agentctl_session=[A-Za-z0-9_-]{43}; Path=\/; HttpOnly; SameSite=Strict; Max-Age=(\d+)$/.exec(answer.headers.get('set-cookie')!)!;
    // Twelve hours, less the moment the sign-in took.
    expect(Number(maxAge)).toBeGreaterThan(12 * 3600 - 60);
    expect(Number(maxAge)).toBeLessThanOrEqual(12 * 3600);
    expect(answer.body).toMatchObject({ org_admin: true, key: { name: 'bootstrap' } });
    expect(JSON.stringify(answer.body)).not.toContain(svc.adminKey);
    const cookie = answer.cookie!;
    expect((await svc.api('GET', '/whoami', withCookie(cookie))).body.id).toBe(answer.body.key.id);
    expect((await svc.api('GET', '/sessions/current', withCookie(cookie))).body.csrf_token).toBe(answer.body.csrf_token);
  });

  test('a change made with the cookie needs the session’s CSRF token', async () => {
    const { cookie, body: session } = await signIn({ api_key: svc.adminKey });
    const create = (headers: Record<string, string>) =>
      svc.api('POST', '/namespaces', { body: { name: 'Team A', slug: 'team-a' }, ...withCookie(cookie!, headers) });
    expect(await create({})).toMatchObject({ status: 403, body: { code: 'csrf_token_invalid' } });
    expect(await create({ 'x-csrf-token': 'not-the-token' })).toMatchObject({ status: 403, body: { code: 'csrf_token_invalid' } });
    expect((await create({ 'x-csrf-token': session.csrf_token })).status).toBe(201);
  });

  test('sign-out ends the session', async () => {
    const { cookie, body: session } = await signIn({ api_key: svc.adminKey });
    const out = await svc.api('DELETE', '/sessions/current', withCookie(cookie!, { 'x-csrf-token': session.csrf_token }));
    expect(out.status).toBe(200);
    expect(out.headers.get('set-cookie')).toContain('Max-Age=0');
    expect(await svc.api('GET', '/whoami', withCookie(cookie!))).toMatchObject({
      status: 401,
      body: { detail: 'The console session has ended: sign in again' },
    });
  });

  test('revoking the key ends its sessions', async () => {
    const created = await svc.api('POST', '/api_keys', {
      body: { name: 'reader', scopes: [{ resource_type: 'org', resource_id: (await svc.api('GET', '/whoami')).body.org_id, role: 'member' }] },
    });
    const { cookie } = await signIn({ api_key: created.body.secret });
    expect((await svc.api('GET', '/whoami', withCookie(cookie!))).status).toBe(200);
    expect((await svc.api('DELETE', `/api_keys/${created.body.api_key.id}`)).status).toBe(200);
    expect(await svc.api('GET', '/whoami', withCookie(cookie!))).toMatchObject({
      status: 401,
      body: { detail: 'The API key of this console session has been revoked: the session has ended' },
    });
  });

  test('a one-time sign-in token works once', async () => {
    const link = await svc.api('POST', '/sessions/sign-in-tokens');
    expect(link.status).toBe(201);
    expect(link.body.path).toBe(`/console/sign-in?token=${link.body.token}`);
    expect((await signIn({ token: link.body.token })).status).toBe(201);
    expect(await signIn({ token: link.body.token })).toMatchObject({ status: 401, body: { code: 'sign_in_token_invalid' } });
  });

  test('bad sign-ins: a wrong key, neither or both credentials, another origin', async () => {
    expect((await signIn({ api_key: 'agk_nope' })).status).toBe(401);
    expect(await signIn({})).toMatchObject({ status: 422, body: { detail: [{ loc: ['body'], msg: 'Send exactly one of `api_key` and `token`' }] } });
    expect((await signIn({ api_key: svc.adminKey, token: 'x' })).status).toBe(422);
    expect(await signIn({ api_key: svc.adminKey }, { origin: 'https://evil.example' })).toMatchObject({ status: 403, body: { code: 'forbidden' } });
  });

  test('access: org admin, and a key’s permissions on an agent it may discover', async () => {
    const admin = await svc.api('GET', '/access');
    expect(admin.body).toEqual({ org_admin: true, agent: null });
    const reader = await scopedKey(svc, [{ resource_type: 'org', resource_id: (await svc.api('GET', '/whoami')).body.org_id, role: 'member' }]);
    expect((await svc.api('GET', '/access', { key: reader })).body).toEqual({ org_admin: false, agent: null });
    expect((await svc.api('GET', '/access?agent_id=agt_missing', { key: reader })).status).toBe(404);
  });
});

describe('the console pages', () => {
  const svc = useService('pglite');

  test('a browser asking / is sent to /console/; API clients are not', async () => {
    const page = await fetch(`${svc.url}/`, { headers: { accept: 'text/html' }, redirect: 'manual' });
    expect([page.status, page.headers.get('location')]).toEqual([302, '/console/']);
    expect((await fetch(`${svc.url}/`, { headers: { accept: 'application/json' } })).status).toBe(404);
    expect((await fetch(`${svc.url}/healthz`)).status).toBe(200);
  });

  test('every console page has a strict CSP, no inline script, and is revalidated; hashed assets are immutable', async () => {
    const page = await fetch(`${svc.url}/console/tasks/task_x`);
    expect(page.status).toBe(200);
    const csp = page.headers.get('content-security-policy')!;
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe-inline');
    expect(page.headers.get('cache-control')).toBe('no-cache');
    const html = await page.text();
    expect(html).not.toMatch(/<script(?![^>]*\ssrc=)[^>]*>/);
    const script = /src="(\/console\/assets\/console-[A-Z0-9]+\.js)"/.exec(html)![1]!;
    const asset = await fetch(svc.url + script, { headers: { 'accept-encoding': 'gzip' } });
    expect(asset.status).toBe(200);
    expect(asset.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
    expect(asset.headers.get('content-type')).toBe('text/javascript; charset=utf-8');
    expect((await fetch(`${svc.url}/console/assets/..%2Fpackage.json`)).status).toBe(404);
  });
});
