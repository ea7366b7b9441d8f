/**
 * Agent secrets through the API and in the store (README "Secrets"): set, list and delete without
 * a value in any answer; the value sealed at rest (AES-256-GCM under a data key wrapped by the
 * master key); the environment scope resolved through branch rules; who may set them; bad input;
 * rotating the master key; and a server that refuses to start without the key its secrets need.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeEach, describe, expect, test } from 'vitest';
import { AgentSecret } from '../../src/contract/secrets.js';
import { secretDigests, versionSecretEnv } from '../../src/server/domain/secrets.js';
import { chooseMasterKey, MasterKey, MasterKeyError, parseMasterKey, SECRETS_KEY_FILE } from '../../src/server/secrets/keyring.js';
import { rotateSecretsKey } from '../../src/server/secrets/rotate.js';
import { startServer } from '../../src/server/main.js';
import { createTestDatabase, engines, useService } from '../support/service.js';
import { deploy, type Deployed } from '../support/fixtures.js';
import { defaultNamespaceId, scopedKey } from '../support/scoped-key.js';
import { expectError, expectInvalid } from '../support/bad-input.js';

const BASE = '/agents/default/support-bot/secrets';
const VALUE = 'sk-live-4f9c2a7e-the-plaintext';

describe.each(engines)('agent secrets (%s)', (engine) => {
  const svc = useService(engine);
  let agent: Deployed;
  beforeEach(async () => {
    agent = await deploy(svc);
  });

  const put = (name: string, body: unknown, key?: string) => svc.api('PUT', `${BASE}/${name}`, { body, key });
  const rows = () => svc.store.db.selectFrom('agent_secrets').selectAll().orderBy('name').execute();

  describe('PUT .../secrets/{name}', () => {
    test('creates the secret and answers its name and scope, never its value', async () => {
      const res = await put('OPENAI_API_KEY', { value: VALUE });

      expect(res.status).toBe(200);
      const secret = AgentSecret.parse(res.body);
      expect(secret).toMatchObject({ agent_id: agent.agent_id, name: 'OPENAI_API_KEY', scope: 'agent', environment: null, revision: 1 });
      expect(Object.keys(res.body).sort()).toEqual(['agent_id', 'created_at', 'environment', 'id', 'name', 'revision', 'scope', 'updated_at']);
      expect(JSON.stringify(res.body)).not.toContain(VALUE);
    });

    test('stores the value encrypted: the row holds neither the plaintext nor its base64', async () => {
      await put('OPENAI_API_KEY', { value: VALUE });

      const [row] = await rows();
      const text = JSON.stringify(row);
      expect(text).not.toContain(VALUE);
      expect(text).not.toContain(Buffer.from(VALUE).toString('base64'));
      expect(row!.key_id).toBe(svc.service.secretsKey.id);
      // iv (12) + tag (16) + the value's bytes.
      expect(Buffer.from(row!.ciphertext, 'base64').length).toBe(12 + 16 + Buffer.byteLength(VALUE));
    });

    test('replacing the value raises the revision and seals it under a new data key', async () => {
      await put('OPENAI_API_KEY', { value: VALUE });
      const [before] = await rows();

      const res = await put('OPENAI_API_KEY', { value: 'sk-second' });

      expect(res.status).toBe(200);
      expect(res.body.revision).toBe(2);
      expect(res.body.id).toBe(before!.id);
      const [after] = await rows();
      expect(after!.wrapped_key).not.toBe(before!.wrapped_key);
      expect((await versionSecretEnv(svc.store.db, svc.service.secretsKey, agent.version_id)).env).toEqual({ OPENAI_API_KEY: 'sk-second' });
    });

    test('an environment-scoped value goes to versions whose branch falls in that environment; others get the agent-wide one', async () => {
      const feature = await deploy(svc, { branch: 'feature/search' });
      await put('DATABASE_URL', { value: 'postgres://everyone' });
      await put('DATABASE_URL', { value: 'postgres://prod-only', environment: 'production' });
      await put('ONLY_PREVIEW', { value: 'preview-value', environment: 'preview' });

      const main = await versionSecretEnv(svc.store.db, svc.service.secretsKey, agent.version_id);
      const preview = await versionSecretEnv(svc.store.db, svc.service.secretsKey, feature.version_id);

      expect(main.env).toEqual({ DATABASE_URL: 'postgres://prod-only' });
      expect(preview.env).toEqual({ DATABASE_URL: 'postgres://everyone', ONLY_PREVIEW: 'preview-value' });
      expect(main.digest).not.toBe(preview.digest);
    });

    test('the digest a version runs with changes when one of its secrets does, and only then', async () => {
      const feature = await deploy(svc, { branch: 'feature/search' });
      await put('DATABASE_URL', { value: 'one' });
      const before = await secretDigests(svc.store.db, [agent.version_id, feature.version_id]);

      await put('DATABASE_URL', { value: 'two', environment: 'production' });
      const after = await secretDigests(svc.store.db, [agent.version_id, feature.version_id]);

      expect(after.get(agent.version_id)).not.toBe(before.get(agent.version_id));
      expect(after.get(feature.version_id)).toBe(before.get(feature.version_id));
    });

    test('a name that is not an environment variable name is 422 at path.secret_name', async () => {
      for (const name of ['1ABC', 'MY-KEY', 'A.B', 'ÄPFEL']) expectInvalid(await put(encodeURIComponent(name), { value: 'x' }), ['path', 'secret_name']);
      expect(await rows()).toEqual([]);
    });

    test('a name the platform sets itself (AGENTCTL_*, PORT) is 422', async () => {
      expectInvalid(await put('AGENTCTL_SIGNING_SECRET', { value: 'x' }), ['path', 'secret_name']);
      expectInvalid(await put('PORT', { value: '1' }), ['path', 'secret_name']);
    });

    test('a value over 64 KiB is 413; exactly 64 KiB is taken', async () => {
      expectError(await put('BIG', { value: 'x'.repeat(65_537) }), 413, 'secret_too_large', 'A secret value is at most 65536 bytes; this one is 65537');
      expectError(await put('BIG', { value: 'é'.repeat(32_769) }), 413, 'secret_too_large');
      expect((await put('BIG', { value: 'x'.repeat(65_536) })).status).toBe(200);
    });

    test('an empty or missing value is 422 at body.value', async () => {
      expectInvalid(await put('EMPTY', { value: '' }), ['body', 'value']);
      expectInvalid(await put('EMPTY', {}), ['body', 'value']);
    });

    test('an unknown agent or environment is 404', async () => {
      expectError(await svc.api('PUT', '/agents/default/nope/secrets/KEY', { body: { value: 'x' } }), 404, 'not_found', 'Agent default/nope was not found');
      expectError(await put('KEY', { value: 'x', environment: 'staging' }), 404, 'not_found', 'Environment staging of agent default/support-bot was not found');
    });
  });

  describe('who may set them', () => {
    test('an agent editor and a namespace admin may; a viewer may list but not set (403); a key with no grant sees 404', async () => {
      const editor = await scopedKey(svc, [{ resource_type: 'agent', resource_id: agent.agent_id, role: 'editor' }], 'editor');
      const nsAdmin = await scopedKey(svc, [{ resource_type: 'namespace', resource_id: await defaultNamespaceId(svc), role: 'admin' }], 'ns-admin');
      const viewer = await scopedKey(svc, [{ resource_type: 'agent', resource_id: agent.agent_id, role: 'viewer' }], 'viewer');
      const stranger = await scopedKey(svc, [], 'stranger');

      expect((await put('FROM_EDITOR', { value: 'a' }, editor)).status).toBe(200);
      expect((await put('FROM_NS_ADMIN', { value: 'b' }, nsAdmin)).status).toBe(200);
      expectError(await put('FROM_VIEWER', { value: 'c' }, viewer), 403, 'forbidden');
      expectError(await svc.api('DELETE', `${BASE}/FROM_EDITOR`, { key: viewer }), 403, 'forbidden');
      expectError(await put('FROM_STRANGER', { value: 'd' }, stranger), 404, 'not_found');

      const listed = await svc.api('GET', BASE, { key: viewer });
      expect(listed.status).toBe(200);
      expect(listed.body.secrets.map((s: AgentSecret) => s.name)).toEqual(['FROM_EDITOR', 'FROM_NS_ADMIN']);
    });
  });

  describe('GET .../secrets and DELETE .../secrets/{name}', () => {
    test('lists names, scopes and times, agent-wide first, never a value', async () => {
      await put('ZED', { value: 'z-value' });
      await put('ALPHA', { value: 'a-value' });
      await put('ALPHA', { value: 'a-prod', environment: 'production' });

      const res = await svc.api('GET', BASE);

      expect(res.status).toBe(200);
      expect(res.body.total).toBe(3);
      expect(res.body.secrets.map((s: AgentSecret) => [s.name, s.scope, s.environment])).toEqual([
        ['ALPHA', 'agent', null],
        ['ZED', 'agent', null],
        ['ALPHA', 'environment', 'production'],
      ]);
      for (const value of ['z-value', 'a-value', 'a-prod']) expect(JSON.stringify(res.body)).not.toContain(value);
    });

    test('deletes the agent-wide one, or with ?environment= that environment’s; a missing one is 404', async () => {
      await put('ALPHA', { value: 'a-value' });
      await put('ALPHA', { value: 'a-prod', environment: 'production' });

      const res = await svc.api('DELETE', `${BASE}/ALPHA?environment=production`);
      expect(res.status).toBe(200);
      expect(res.body.message).toBe('Secret ALPHA of agent default/support-bot in environment production deleted');
      expect((await rows()).map((r) => [r.name, r.environment_id])).toEqual([['ALPHA', null]]);

      expectError(
        await svc.api('DELETE', `${BASE}/ALPHA?environment=production`),
        404,
        'not_found',
        'Secret ALPHA of agent default/support-bot in environment production was not found',
      );
      expect((await svc.api('DELETE', `${BASE}/ALPHA`)).status).toBe(200);
      expect(await rows()).toEqual([]);
    });
  });

  describe('the master key', () => {
    const dirs: string[] = [];
    const tempDir = () => {
      const dir = mkdtempSync(path.join(tmpdir(), 'agentctl-secrets-key-'));
      dirs.push(dir);
      return dir;
    };
    afterAll(() => {
      for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
    });

    test('rotation re-wraps every data key under a new key file (mode 0600); values open with the new key only', async () => {
      const dir = tempDir();
      const file = path.join(dir, SECRETS_KEY_FILE);
      // The key file the server would have made at first start, holding the service's key.
      const current = chooseMasterKey({ file }, []);
      await put('OPENAI_API_KEY', { value: VALUE });
      await put('OPENAI_API_KEY', { value: 'prod-value', environment: 'production' });
      // The secrets above were sealed under the test service's key: re-seal them under the file's.
      await rotateSecretsKey(svc.store.db, { envKey: svc.service.secretsKey.encoded() }, current);
      const before = await rows();

      const result = await rotateSecretsKey(svc.store.db, { file });

      expect(result.rewrapped).toBe(2);
      expect(result.previous_key_id).toBe(current.id);
      expect(result.key_file).toBe(file);
      const next = parseMasterKey(readFileSync(file, 'utf8'), file);
      expect(result.key_id).toBe(next.id);
      expect(statSync(file).mode & 0o777).toBe(0o600);
      expect(existsSync(`${file}.new`)).toBe(false);
      const after = await rows();
      expect(after.map((r) => r.key_id)).toEqual([next.id, next.id]);
      // Only the wrapping changed: the values' ciphertexts are the same bytes.
      expect(after.map((r) => r.ciphertext)).toEqual(before.map((r) => r.ciphertext));
      expect((await versionSecretEnv(svc.store.db, next, agent.version_id)).env).toEqual({ OPENAI_API_KEY: 'prod-value' });
      await expect(versionSecretEnv(svc.store.db, current, agent.version_id)).rejects.toThrow(MasterKeyError);
    });

    test('with AGENTCTL_SECRETS_KEY, rotation needs the new key given', async () => {
      await put('OPENAI_API_KEY', { value: VALUE });
      await expect(rotateSecretsKey(svc.store.db, { envKey: svc.service.secretsKey.encoded() })).rejects.toThrow(/give the new one on standard input/);
    });

    test('a key that is not base64 of 32 bytes is refused with how to make one', () => {
      expect(() => parseMasterKey(Buffer.alloc(16).toString('base64'), 'AGENTCTL_SECRETS_KEY')).toThrow(
        'AGENTCTL_SECRETS_KEY holds 16 bytes: it must hold 32 random bytes in base64 (make one with: openssl rand -base64 32)',
      );
    });

    test('a server with secrets refuses to start without its key, or with another one, and says what to do', async () => {
      const dir = tempDir();
      const database = engine === 'postgres' ? await createTestDatabase() : undefined;
      const where = database ? { databaseUrl: database.url, secretsKeyFile: path.join(dir, SECRETS_KEY_FILE) } : { dataDir: path.join(dir, 'pglite') };
      try {
        const first = await startServer({ ...where, port: 0, runtime: 'none', logger: false });
        const key = first.bootstrap.secret!;
        expect(statSync(path.join(dir, SECRETS_KEY_FILE)).mode & 0o777).toBe(0o600);
        const res = await fetch(`${first.url}/agents/deploy`, {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({
            agent_name: 'bot',
            branch: 'main',
            git_hash: 'a'.repeat(40),
            author_name: 'Ada',
            author_email: 'ada@example.com',
            image_url: 'registry.local/bot:1',
          }),
        });
        expect(res.status).toBe(201);
        const set = await fetch(`${first.url}/agents/default/bot/secrets/API_TOKEN`, {
          method: 'PUT',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ value: VALUE }),
        });
        expect(set.status).toBe(200);
        await first.close();

        const keyFile = path.join(dir, SECRETS_KEY_FILE);
        rmSync(keyFile);
        await expect(startServer({ ...where, port: 0, runtime: 'none', logger: false })).rejects.toThrow(
          `The database holds agent secrets but there is no master key: set AGENTCTL_SECRETS_KEY or restore ${keyFile} (the key they were sealed with). The server does not start agents without their secrets.`,
        );
        expect(existsSync(keyFile)).toBe(false);

        const other = MasterKey.generate('test');
        const previous = process.env.AGENTCTL_SECRETS_KEY;
        process.env.AGENTCTL_SECRETS_KEY = other.encoded();
        try {
          await expect(startServer({ ...where, port: 0, runtime: 'none', logger: false })).rejects.toThrow(
            /^The agent secrets in the database were sealed with master key mk_[0-9a-f]{16}, but AGENTCTL_SECRETS_KEY holds mk_[0-9a-f]{16}: start the server with the key they were sealed with\.$/,
          );
        } finally {
          if (previous === undefined) delete process.env.AGENTCTL_SECRETS_KEY;
          else process.env.AGENTCTL_SECRETS_KEY = previous;
        }
      } finally {
        await database?.drop();
      }
    }, 120_000);
  });
});
