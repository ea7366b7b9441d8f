// The web console in a real browser (Debian's chromium through playwright-core) against a real
// server started by the built CLI, with a real agent (the streaming example) deployed from git:
// sign in with a one-time link, watch a streamed answer arrive, send an event, create a key through
// the four steps and use it from the CLI, revoke it and see its session end, sign out. Security:
// the CSP header, a hostile message rendered as text, the session cookie out of script's reach.
// Screenshots of the main views go to docs/console-*.png (README "Web console").
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { execa } from 'execa';
import type { BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createClient } from '../../src/client/index.js';
import { tempDir } from '../cli/support.js';
import { freePort } from '../support/ports.js';

const CHROMIUM = '/usr/bin/chromium';
const BIN = path.resolve('bin/agentctl.js');
const SHOTS = path.resolve('docs');
const GIT_ENV = { GIT_AUTHOR_NAME: 'Ada', GIT_AUTHOR_EMAIL: 'ada@example.com', GIT_COMMITTER_NAME: 'Ada', GIT_COMMITTER_EMAIL: 'ada@example.com' };
const HOSTILE = `<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>\u202Egnirts desrever ${'W'.repeat(3000)}`;

if (!existsSync(CHROMIUM)) console.warn(`console e2e skipped: ${CHROMIUM} is missing (apt-get install -y chromium; .ci/run installs it)`);

describe.skipIf(!existsSync(CHROMIUM))('the web console in chromium', () => {
  const scratch = tempDir('agentctl-console-e2e-');
  const project = path.join(scratch.dir, 'streamer');
  const env = {
    AGENTCTL_CONFIG_DIR: path.join(scratch.dir, 'config'),
    AGENTCTL_DATA_DIR: path.join(scratch.dir, 'data'),
    CI: 'true',
    ...GIT_ENV,
    AGENTCTL_API_KEY: undefined,
    AGENTCTL_BASE_URL: undefined,
    AGENTCTL_PROFILE: undefined,
    DATABASE_URL: undefined,
  };
  const agentctl = (args: string[], extra: Record<string, string> = {}) =>
    execa(process.execPath, [BIN, ...args], { env: { ...env, ...extra }, extendEnv: true, cwd: project, reject: false });
  const json = async (args: string[], extra: Record<string, string> = {}) => {
    const result = await agentctl([...args, '--json'], extra);
    if (result.exitCode !== 0) throw new Error(`agentctl ${args.join(' ')} exited ${result.exitCode}: ${result.stderr}`);
    return JSON.parse(result.stdout);
  };
  let baseUrl = '';
  let adminKey = '';
  const profiles: string[] = [];
  const contexts: BrowserContext[] = [];

  /** A browser of its own (a fresh profile directory, removed after): its own cookie jar. */
  async function browser(): Promise<{ context: BrowserContext; page: Page }> {
    const { chromium } = await import('playwright-core');
    const userDataDir = mkdtempSync(path.join(os.tmpdir(), 'agentctl-chromium-'));
    profiles.push(userDataDir);
    const context = await chromium.launchPersistentContext(userDataDir, {
      executablePath: CHROMIUM,
      headless: true,
      viewport: { width: 1200, height: 820 },
      args: [
        '--headless',
        '--no-sandbox',
        '--disable-gpu',
        '--no-first-run',
        '--disable-background-networking',
        '--disable-component-update',
        '--disable-sync',
      ],
    });
    contexts.push(context);
    const page = context.pages()[0] ?? (await context.newPage());
    return { context, page };
  }
  /** A screenshot for the README; a key's secret is masked even though the key dies with the test. */
  const shot = (page: Page, name: string) => page.screenshot({ path: path.join(SHOTS, `console-${name}.png`), mask: [page.locator('#secret')] });
  /** A one-time sign-in link from `agentctl open`, at a resource. */
  const openLink = async (resource?: string) => (await json(['open', ...(resource ? [resource] : []), '--print'])).url as string;

  beforeAll(async () => {
    const init = await execa(process.execPath, [BIN, 'init', 'streamer', '--agent', 'default/streamer'], {
      env,
      extendEnv: true,
      cwd: scratch.dir,
      reject: false,
    });
    expect(init.exitCode, init.stderr).toBe(0);
    // The streaming example, its tokens slow enough to be seen arriving.
    const source = readFileSync(path.resolve('examples/streaming/src/index.ts'), 'utf8').replace(
      'process.env.TOKEN_DELAY_MS ?? 20',
      'process.env.TOKEN_DELAY_MS ?? 150',
    );
    writeFileSync(path.join(project, 'src', 'index.ts'), source);
    await execa('git', ['commit', '-q', '-am', 'the streaming agent'], { cwd: project, env: GIT_ENV });
    const started = await agentctl(['server', 'start', '--detach', '--port', String(await freePort()), '--json']);
    expect(started.exitCode, started.stderr).toBe(0);
    const config = JSON.parse(readFileSync(path.join(env.AGENTCTL_CONFIG_DIR, 'config.json'), 'utf8'));
    baseUrl = config.profiles.local.base_url;
    adminKey = config.profiles.local.api_key;
    expect(await json(['deploy'])).toMatchObject({ status: 'ACTIVE', number: 1 });
  }, 240_000);

  afterAll(async () => {
    for (const context of contexts) await context.close().catch(() => undefined);
    for (const dir of profiles) rmSync(dir, { recursive: true, force: true });
    await agentctl(['server', 'stop']);
    scratch.remove();
  });

  test('sign in, a streamed answer, an event, a key made in four steps, revoked, sign-out', { timeout: 300_000 }, async () => {
    const task = await json(['tasks', 'create', '--agent', 'default/streamer', '--name', 'console-demo']);

    // ---- the page and its headers, before signing in
    const admin = await browser();
    const page = admin.page;
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    const first = await page.goto(`${baseUrl}/`, { waitUntil: 'load' });
    expect(new URL(page.url()).pathname).toBe('/console/');
    const csp = first!.headers()['content-security-policy'];
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain('unsafe-inline');
    await page.getByLabel('API key').waitFor();
    await shot(page, 'sign-in');

    // Where no browser can be started (no DISPLAY), `agentctl open` prints the link on stdout.
    const printed = await agentctl(['open', task.id], { DISPLAY: '', WAYLAND_DISPLAY: '' });
    expect(printed.exitCode, printed.stderr).toBe(0);
    expect(printed.stdout).toMatch(new RegExp(`^${baseUrl}/console/sign-in\\?token=[A-Za-z0-9_-]{43}&next=%2Fconsole%2Ftasks%2F${task.id}$`));
    expect(printed.stderr).toContain('No browser to open here: open this link');

    // ---- sign in with `agentctl open`'s one-time link, straight to the task
    await page.goto(await openLink(task.id));
    await page.getByRole('heading', { name: /Task console-demo/ }).waitFor();
    expect(new URL(page.url()).pathname).toBe(`/console/tasks/${task.id}`);
    expect(page.url()).not.toContain('token=');
    // The session cookie: set, HttpOnly, SameSite=Strict, and not readable from script.
    const cookies = await admin.context.cookies();
    expect(cookies.find((c) => c.name === 'agentctl_session')).toMatchObject({ httpOnly: true, sameSite: 'Strict' });
    expect(await page.evaluate(() => document.cookie)).not.toContain('agentctl_session');
    await page.getByText('Live', { exact: true }).waitFor();

    // ---- send an event; the answer streams in token by token
    await page.getByLabel('Send an event').fill('what is this console');
    await page.getByRole('button', { name: 'Send' }).click();
    await page.locator('li[data-kind="event"]', { hasText: 'what is this console' }).waitFor();
    // Seen while it is being written: the text message IN_PROGRESS, part of its text shown.
    const streaming = page.locator('li[data-kind="text"][data-streaming="IN_PROGRESS"]');
    await streaming.waitFor();
    const partial = await streaming.locator('.message-text').textContent();
    expect('You asked: "what is this console". That is 4 words long.'.startsWith(partial ?? '')).toBe(true);
    const answer = page.locator('li[data-kind="text"][data-streaming="DONE"]');
    await answer.waitFor();
    expect(await answer.locator('.message-text').textContent()).toBe('You asked: "what is this console". That is 4 words long.');
    // The reasoning is there, collapsed; the tool call and its result are shown.
    expect(await page.locator('details.reasoning').first().getAttribute('open')).toBeNull();
    await page.locator('li[data-kind="tool_request"]', { hasText: 'count_words' }).waitFor();
    await page.locator('li[data-kind="tool_response"]', { hasText: '"words": 4' }).waitFor();
    // Each record once: one event, one answer.
    expect(await page.locator('li[data-kind="event"]').count()).toBe(1);
    expect(await page.locator('li[data-kind="text"]').count()).toBe(1);
    await shot(page, 'task');

    // ---- a hostile message renders as text
    const writer = createClient({ baseUrl, apiKey: adminKey, retries: 0 });
    await writer.createMessage({ body: { task_id: task.id, content: HOSTILE } });
    const hostile = page.locator('li[data-kind="text"]', { hasText: '<script>' });
    await hostile.waitFor();
    expect(await hostile.locator('.message-text').textContent()).toBe(HOSTILE);
    expect(await page.locator('.conversation img, .conversation script').count()).toBe(0);
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    // The long unbroken string wraps: the page does not scroll sideways.
    expect(await page.evaluate(() => document.documentElement.scrollWidth <= document.documentElement.clientWidth)).toBe(true);

    // ---- the lists
    await page.getByRole('link', { name: 'Tasks', exact: true }).click();
    await page.getByRole('link', { name: 'console-demo' }).waitFor();
    await page.getByLabel('Status').selectOption('COMPLETED');
    await page.getByRole('button', { name: 'Filter' }).click();
    await page.getByText('No tasks match.').waitFor();
    await page.getByRole('button', { name: 'Clear' }).click();
    await page.getByRole('link', { name: 'console-demo' }).waitFor();
    await shot(page, 'tasks');
    await page.getByRole('link', { name: 'Agents', exact: true }).click();
    await page.getByRole('link', { name: 'default/streamer' }).click();
    await page.getByRole('link', { name: 'v1' }).waitFor();
    await shot(page, 'agent');
    await page.getByRole('link', { name: 'Overview' }).click();
    await page.getByRole('link', { name: '1 agent', exact: true }).waitFor();
    await shot(page, 'overview');

    // ---- a key through the four steps; its secret, shown once, works from the CLI
    await page.getByRole('link', { name: 'API keys' }).click();
    await page.getByRole('link', { name: 'Create a key' }).click();
    await page.getByLabel(/Read-Only/).check();
    await shot(page, 'key-step-1');
    await page.getByRole('button', { name: 'Next →' }).click();
    await page.getByText('agent:default/streamer:viewer').waitFor();
    await page.getByRole('button', { name: 'Next →' }).click();
    await page.getByText('Step 3 of 4 · Sharing groups').waitFor();
    await page.getByRole('button', { name: 'Next →' }).click();
    await page.getByLabel('Name').fill('console-made');
    await page.getByRole('button', { name: 'Create the key' }).click();
    const secret = await page.getByLabel('Secret').inputValue();
    expect(secret).toMatch(/^agk_/);
    await page.getByRole('button', { name: 'Copy' }).waitFor();
    await shot(page, 'key-created');
    const seen = await json(['tasks', 'get', task.id], { AGENTCTL_API_KEY: secret });
    expect(seen.id).toBe(task.id);

    // ---- a second browser signs in with that key through the form
    const reader = await browser();
    await reader.page.goto(`${baseUrl}/console/tasks`);
    await reader.page.getByLabel('API key').fill(secret);
    await reader.page.getByRole('button', { name: 'Sign in' }).click();
    await reader.page.getByRole('link', { name: 'console-demo' }).waitFor();
    // Not an org admin: keys are not offered.
    expect(await reader.page.getByRole('link', { name: 'API keys' }).count()).toBe(0);

    // ---- revoking the key (in the admin's browser) ends that session
    await page.getByRole('link', { name: 'API keys' }).click();
    await page.getByRole('button', { name: 'Revoke console-made', exact: true }).click();
    await page.getByRole('button', { name: 'Revoke console-made now' }).click();
    await page.getByRole('button', { name: 'Revoke console-made', exact: true }).waitFor({ state: 'detached' });
    await reader.page.getByRole('link', { name: 'Overview' }).click();
    await reader.page.getByText('The API key of this console session has been revoked: the session has ended').waitFor();
    await reader.page.getByLabel('API key').waitFor();

    // ---- sign-out ends the admin's session
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.getByText('You have signed out.').waitFor();
    await page.reload();
    await page.getByLabel('API key').waitFor();
    expect(errors).toEqual([]);

    // ---- dark mode
    const dark = await browser();
    await dark.page.emulateMedia({ colorScheme: 'dark' });
    await dark.page.goto(await openLink(task.id));
    await dark.page.locator('li[data-kind="text"][data-streaming="DONE"]').first().waitFor();
    await shot(dark.page, 'task-dark');
  });
});
