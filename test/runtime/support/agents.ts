import { cpSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { LaunchSecrets, RuntimeDriver, RuntimeHappening, VersionSpec } from '../../../src/server/runtime/driver.js';

/** The fixture agents under test/fixtures/agents. */
export const FIXTURE_AGENTS = fileURLToPath(new URL('../../fixtures/agents/', import.meta.url));

/** A prepareSource that copies the fixture directory named by the spec's image (`local://plain`). */
export async function copyFixture(spec: VersionSpec, dir: string): Promise<void> {
  const name = spec.imageUrl.replace(/^local:\/\//, '');
  cpSync(join(FIXTURE_AGENTS, name), dir, { recursive: true });
}

let n = 0;
export function specFor(fixture: string, overrides: Partial<VersionSpec> = {}): VersionSpec {
  n += 1;
  return {
    versionId: `ver_test${process.pid}x${n}`,
    branchId: 'br_test',
    agentId: 'agt_test',
    agentName: `default/${fixture}`,
    imageUrl: `local://${fixture}`,
    sourceFilesystemId: null,
    replicas: 1,
    acpType: 'async',
    env: {},
    ...overrides,
  };
}

/** Secrets whose tokens are counted: a fresh one per process start. */
export function testSecrets(): LaunchSecrets & { issued: string[] } {
  const issued: string[] = [];
  return {
    issued,
    baseUrl: 'http://127.0.0.1:9',
    signingSecret: 'whsec_test_signing_secret',
    async registrationToken() {
      const token = `rt_test_${issued.length + 1}`;
      issued.push(token);
      return token;
    },
  };
}

/** Records every happening; `next` waits for the first one of a kind not consumed yet. */
export function recordHappenings(driver: RuntimeDriver) {
  const seen: Array<{ versionId: string; happening: RuntimeHappening }> = [];
  const waiters = new Set<() => void>();
  driver.onHappening((versionId, happening) => {
    seen.push({ versionId, happening });
    for (const wake of waiters) wake();
  });
  return {
    seen,
    kinds: (versionId: string) => seen.filter((s) => s.versionId === versionId).map((s) => s.happening.kind),
    async next<K extends RuntimeHappening['kind']>(versionId: string, kind: K, timeoutMs = 20_000): Promise<Extract<RuntimeHappening, { kind: K }>> {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const index = seen.findIndex((s) => s.versionId === versionId && s.happening.kind === kind);
        if (index >= 0) return seen.splice(index, 1)[0]!.happening as Extract<RuntimeHappening, { kind: K }>;
        if (Date.now() > deadline)
          throw new Error(`no ${kind} happening for ${versionId} within ${timeoutMs} ms (saw: ${seen.map((s) => s.happening.kind).join(', ')})`);
        await new Promise<void>((done) => {
          const wake = () => {
            waiters.delete(wake);
            clearTimeout(timer);
            done();
          };
          const timer = setTimeout(wake, Math.max(0, deadline - Date.now()));
          waiters.add(wake);
        });
      }
    },
  };
}

/** Whether a process exists (signal 0). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

export async function waitFor<T>(what: string, probe: () => T | Promise<T>, timeoutMs = 20_000): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((done) => setTimeout(done, 25));
  }
}

export function tempDir(prefix: string): { path: string; remove: () => void } {
  const path = mkdtempSync(join(tmpdir(), prefix));
  return { path, remove: () => rmSync(path, { recursive: true, force: true }) };
}
