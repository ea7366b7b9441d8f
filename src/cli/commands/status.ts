import { defineCommand } from '../command.js';
import { ExitCode } from '../exit-codes.js';
import { agent } from '../options.js';
import { text } from '../output/view.js';
import { UnreachableError } from '../../client/errors.js';
import type { StatusReport, StatusVersion } from '../../contract/status.js';

/** `v3 ACTIVE 1/1 replicas (3f2a9c1)` */
const versionLine = (v: StatusVersion) => `v${v.number} ${v.status} ${v.live_replicas}/${v.replicas} replicas (${v.git_hash.slice(0, 7)})`;

/** `3.2 s`, `4 min`, `2 h` */
const age = (ms: number) =>
  ms < 60_000 ? `${(ms / 1000).toFixed(1)} s` : ms < 3_600_000 ? `${Math.round(ms / 60_000)} min` : `${Math.round(ms / 3_600_000)} h`;

/** The status screen: one section per concern, each line of the form a person scans. */
function screen(place: { profile: string; baseUrl: string }, report: StatusReport): string {
  const lines = [`Server    ${place.baseUrl} (reachable, agentctl ${report.server.version}, ${report.server.engine})`, `Profile   ${place.profile}`];
  const a = report.agent;
  if (a) {
    lines.push('', `Agent     ${a.namespace_slug}/${a.name} (${a.id})`);
    if (a.branches.length === 0) lines.push('  no branches: deploy one with agentctl deploy');
    for (const b of a.branches) {
      lines.push(`  ${b.git_branch}: ${b.serving ? `serving ${versionLine(b.serving)}` : 'no serving version'}`);
      for (const v of b.in_progress) lines.push(`    ${versionLine(v)}${v.status === 'DRAINING' ? `, ${v.tasks} tasks left` : ''}`);
    }
  } else lines.push('', 'Agent     none linked (no agentctl.json here; pass --agent ns/name)');
  const counts = Object.entries(report.tasks).filter(([, n]) => n > 0);
  lines.push('', `Tasks     ${counts.length ? counts.map(([status, n]) => `${status} ${n}`).join(', ') : 'none'}`);
  lines.push(`Rollouts  ${report.rollouts.length ? report.rollouts.map((r) => `${r.branch_id} ${r.step}`).join(', ') : 'none in progress'}`);
  const d = report.deliveries;
  lines.push(
    `Delivery  ${d.pending} pending, ${d.leased} being handled${d.oldest_age_ms === null ? '' : `; oldest ${age(d.oldest_age_ms)} old (${d.oldest_created_at})`}`,
  );
  const f = report.failures;
  if (f.versions.length + f.handler_errors.length + f.tasks.length === 0) lines.push('', 'Failures  none');
  else {
    lines.push('', 'Failures');
    for (const v of f.versions) {
      lines.push(`  v${v.number} on ${v.git_branch} FAILED: ${v.failure_reason ?? 'no reason given'}`);
      if (v.failure_diagnostics) {
        lines.push(`    ${v.failure_diagnostics.title}`);
        for (const line of v.failure_diagnostics.description.split('\n').slice(-5)) lines.push(`    | ${line}`);
        lines.push(`    -> ${v.failure_diagnostics.action}`);
      }
    }
    for (const e of f.handler_errors) lines.push(`  ${e.handler} threw in ${e.task_id}: ${e.message.split('\n')[0]}`);
    for (const t of f.tasks) lines.push(`  task ${t.name ?? t.id} FAILED: ${t.status_reason ?? 'no reason given'}`);
  }
  return `${lines.join('\n')}\n`;
}

export default defineCommand({
  path: ['status'],
  summary: 'Where things stand: server, profile, the linked agent’s versions, tasks, deliveries and recent failures',
  description:
    'The agent is --agent, else the one agentctl.json in this directory names; without one, tasks, deliveries and failures of every agent the key may read. One request.',
  options: [agent],
  examples: ['agentctl status', 'agentctl status --agent default/bot --json'],
  notFoundNext: 'agentctl agents list',
  handler: async (ctx, _args, options) => {
    const c = ctx.credentials();
    const place = { profile: c.profile, baseUrl: c.baseUrl };
    try {
      const { data, raw } = await ctx.call('getStatus', { query: { agent: options.agent } });
      return {
        json: { profile: c.profile, base_url: c.baseUrl, reachable: true, ...(raw as object) },
        view: text(screen(place, data)),
      };
    } catch (error) {
      if (!(error instanceof UnreachableError)) throw error;
      return {
        json: { profile: c.profile, base_url: c.baseUrl, reachable: false, error: error.reason },
        view: text(`Server    ${c.baseUrl} (unreachable: ${error.reason})\nProfile   ${c.profile}\n`),
        exitCode: ExitCode.unreachable,
      };
    }
  },
});
