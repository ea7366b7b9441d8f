// Issue 18, "What a new user tripped over", items 3 to 8, through the built CLI (bin/agentctl.js)
// against a real server. Items 1 and 2 (server start/stop/status) are in newcomer-server.test.ts,
// item 5 (logs) in newcomer-logs.test.ts.
import { describe, expect, test } from 'vitest';
import { engines } from '../support/service.js';
import { createTask, deployActive } from '../support/fixtures.js';
import { freePort } from '../support/ports.js';
import { agentctl, spawnAgentctl } from './built.js';
import { useCliService } from './support.js';

/** Resolves once `read()` matches `pattern` (polled), with what it read. */
async function until(read: () => string, pattern: RegExp, what: string, seconds = 90): Promise<string> {
  const deadline = Date.now() + seconds * 1000;
  for (;;) {
    const text = read();
    if (pattern.test(text)) return text;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}; got:\n${text}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe.each(engines)('newcomer (%s)', (engine) => {
  const { svc, env } = useCliService(engine);

  describe('item 3: tasks watch while the service is down', () => {
    test('each failed attempt is said on stderr and the watch exits 6; with --retry it keeps trying', async () => {
      await deployActive(svc);
      const task = await createTask(svc);
      const down = { ...env, AGENTCTL_BASE_URL: `http://127.0.0.1:${await freePort()}` };

      const patient = spawnAgentctl(['tasks', 'watch', task.id, '--retry'], { env: down });
      let patientErr = '';
      patient.stderr!.on('data', (chunk) => (patientErr += chunk));
      const bounded = await agentctl(['tasks', 'watch', task.id], { env: down });

      expect(bounded.code).toBe(6);
      expect(bounded.stdout).toBe('');
      const attempts = bounded.stderr.split('\n').filter((l) => l.startsWith('warning: lost the task stream'));
      expect(attempts).toHaveLength(8);
      expect(attempts[0]).toMatch(new RegExp(`^warning: lost the task stream from ${down.AGENTCTL_BASE_URL} \\(ECONNREFUSED\\); reconnecting in \\d+\\.\\d s \\(attempt 1 of 8; --retry keeps trying\\)$`));
      expect(attempts[7]).toContain('(attempt 8 of 8; --retry keeps trying)');
      expect(bounded.stderr).toContain(`error: Cannot reach the agentctl service at ${down.AGENTCTL_BASE_URL} (ECONNREFUSED)`);

      // Past the bounded watch's limit, the --retry one is still trying (and says so).
      await until(() => patientErr, /(retrying until it answers; Ctrl-C to stop\)\n[^]*){9}/, 'a ninth attempt of watch --retry');
      // Still running: only Ctrl-C ends it (130); had it given up, it would have exited 6.
      patient.kill('SIGINT');
      expect((await patient).exitCode).toBe(130);
    }, 120_000);
  });
});
