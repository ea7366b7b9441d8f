import { expect } from 'vitest';
import type { TestService } from './service.js';

let commit = 0;
/** A fresh 40-character hex hash, distinct per call. */
export const nextHash = () => (++commit).toString(16).padStart(8, '0') + 'a'.repeat(32);

export interface Deployed {
  agent_id: string;
  branch_id: string;
  version_id: string;
  tasks_migrated: number;
  version_number: number;
}

/** `POST /agents/deploy` with sensible defaults; asserts 201. */
export async function deploy(svc: TestService, overrides: Record<string, unknown> = {}, key?: string): Promise<Deployed> {
  const res = await svc.api('POST', '/agents/deploy', {
    key,
    body: {
      agent_name: 'support-bot',
      branch: 'main',
      git_hash: nextHash(),
      git_message: 'Ship it',
      author_name: 'Ada',
      author_email: 'ada@example.com',
      image_url: 'registry.local/support-bot:1',
      sdk_type: 'alpha_agent_sdk',
      acp_type: 'async',
      ...overrides,
    },
  });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

/** Reports a version ready, as its container would on start; asserts 200. */
export async function register(svc: TestService, versionId: string, key?: string, status = 'ACTIVE') {
  const res = await svc.api('POST', '/versions/register', { key, body: { version_id: versionId, status } });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  return res.body;
}

/** Deploy and register: an ACTIVE version. */
export async function deployActive(svc: TestService, overrides: Record<string, unknown> = {}, key?: string): Promise<Deployed> {
  const d = await deploy(svc, overrides, key);
  await register(svc, d.version_id, key);
  return d;
}

/** `POST /tasks` on an agent; asserts 201. */
export async function createTask(svc: TestService, body: Record<string, unknown> = {}, key?: string) {
  const res = await svc.api('POST', '/tasks', { key, body: { agent_name: 'default/support-bot', ...body } });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body;
}

export async function createTasks(svc: TestService, count: number, body: Record<string, unknown> = {}) {
  const tasks = [];
  for (let i = 0; i < count; i++) tasks.push(await createTask(svc, body));
  return tasks;
}
