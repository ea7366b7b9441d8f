import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { issueRegistrationToken, signingSecretFor } from '../../src/server/domain/registration.js';
import type { TestService } from './service.js';

const AGENT_SCRIPT = fileURLToPath(new URL('../fixtures/delivery/agent.mjs', import.meta.url));

export interface AgentRecord {
  received?: { jsonrpc: string; id: string; method: string; params: any };
  signature_ok?: boolean;
  registered?: string;
  version_status?: string;
  has_key?: boolean;
  registration_failed?: number;
  detail?: unknown;
}

export interface TestAgent {
  pid: number;
  acpUrl: string;
  /** Every line the agent reported, in order. */
  records: AgentRecord[];
  /** The deliveries it received, in order. */
  received(): NonNullable<AgentRecord['received']>[];
  /** Resolves once `predicate` holds for the records (polling), or rejects after `timeoutMs`. */
  waitFor(predicate: (records: AgentRecord[]) => boolean, timeoutMs?: number): Promise<void>;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

const running = new Set<ChildProcess>();

/**
 * Starts the fixture agent for `versionId` as a child process with the process
 * contract of README "Writing agents: the ADK" (a one-time registration token, the signing secret), and waits until it registered.
 */
export async function startAgent(svc: TestService, versionId: string, env: Record<string, string> = {}): Promise<TestAgent> {
  const db = svc.store.db;
  const version = await db.selectFrom('versions').select(['branch_id']).where('id', '=', versionId).executeTakeFirstOrThrow();
  const child = spawn(process.execPath, [AGENT_SCRIPT], {
    env: {
      PATH: process.env.PATH,
      AGENTCTL_BASE_URL: svc.url,
      AGENTCTL_VERSION_ID: versionId,
      AGENTCTL_BRANCH_ID: version.branch_id,
      AGENTCTL_REGISTRATION_TOKEN: await issueRegistrationToken(db, versionId),
      AGENTCTL_SIGNING_SECRET: await signingSecretFor(db, versionId),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  running.add(child);
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  exited.then(() => running.delete(child));
  const records: AgentRecord[] = [];
  createInterface({ input: child.stdout! }).on('line', (line) => records.push(JSON.parse(line)));
  const agent: TestAgent = {
    pid: child.pid!,
    acpUrl: '',
    records,
    received: () => records.flatMap((r) => (r.received ? [r.received] : [])),
    async waitFor(predicate, timeoutMs = 10_000) {
      const deadline = Date.now() + timeoutMs;
      while (!predicate(records)) {
        if (Date.now() > deadline) throw new Error(`agent ${child.pid}: condition not met within ${timeoutMs} ms; records: ${JSON.stringify(records)}`);
        await new Promise((r) => setTimeout(r, 20));
      }
    },
    async kill(signal = 'SIGKILL') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
  await agent.waitFor((r) => r.some((x) => x.registered || x.registration_failed));
  const registered = records.find((r) => r.registered);
  if (!registered) throw new Error(`agent did not register: ${JSON.stringify(records)}`);
  agent.acpUrl = registered.registered!;
  return agent;
}

/** Stops every agent process still running (each by its pid). */
export async function stopAgents(): Promise<void> {
  await Promise.all(
    [...running].map(
      (child) =>
        new Promise<void>((resolve) => {
          if (child.exitCode !== null || child.signalCode !== null) return resolve();
          child.once('exit', () => resolve());
          child.kill('SIGKILL');
        }),
    ),
  );
}
