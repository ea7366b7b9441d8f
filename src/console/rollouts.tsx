// Safe migrations in the console: rollouts (the list; one rollout live, its figures step by step,
// pause, resume and abort), the migration history with undo, and a rehearsal's report with its
// diffs. Actions are offered only when the key may write on the agent (`GET /access`).
import { useEffect, useState } from 'preact/hooks';
import { ACTIVE_ROLLOUT_STATUSES, ROLLOUT_STATUSES, type RolloutStatus } from '../contract/rollout-rules.js';
import type { MigrationRecord, Rollout, RolloutFigures } from '../contract/rollouts.js';
import type { Rehearsal, RehearsalTask } from '../contract/rehearsals.js';
import { api } from './api.js';
import { BASE } from './session.js';
import {
  Act,
  agentNames,
  agentPermissions,
  Confirm,
  Link,
  navigate,
  Pending,
  Status,
  useLoad,
  useLocation,
  usePoll,
  useTitle,
  versionNumbers,
  when,
} from './ui.js';

const MORE = 50;
const isActive = (status: string) => (ACTIVE_ROLLOUT_STATUSES as readonly string[]).includes(status);
const short = (id: string) => (id.length > 14 ? `${id.slice(0, 8)}…${id.slice(-4)}` : id);

export function RolloutsPage() {
  useTitle('Rollouts');
  const q = useLocation().searchParams;
  const status = (q.get('status') ?? '') as RolloutStatus | '';
  const agentId = q.get('agent_id') ?? '';
  const [limit, setLimit] = useState(MORE);
  const loaded = usePoll(
    async () => {
      const list = await api.listRollouts({ query: { limit, ...(status ? { status } : {}), ...(agentId ? { agent_id: agentId } : {}) } });
      const [names, versions] = await Promise.all([agentNames(), versionNumbers(list.rollouts.flatMap((r) => [r.from_version_id, r.to_version_id]))]);
      return { ...list, names, versions };
    },
    [status, agentId, limit],
    3000,
    (d) => d.rollouts.some((r) => isActive(r.status)),
  );
  return (
    <section>
      <h1>Rollouts</h1>
      <p class="muted small">
        A rollout moves a version’s tasks to another in steps, watches each step’s error rate and reverts past its threshold. Start one from a version’s page;
        see every move in the <Link href={`${BASE}/migrations${agentId ? `?agent_id=${agentId}` : ''}`}>migration history</Link>.
      </p>
      <form class="filters" aria-label="Filter rollouts" onSubmit={(e) => e.preventDefault()}>
        <label>
          Status
          <select
            value={status}
            onChange={(e) => {
              const params = new URLSearchParams(q);
              if (e.currentTarget.value) params.set('status', e.currentTarget.value);
              else params.delete('status');
              navigate(`${BASE}/rollouts${params.size ? `?${params}` : ''}`);
            }}
          >
            <option value="">any</option>
            {ROLLOUT_STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
      </form>
      <Pending loaded={loaded}>
        {(data) =>
          data.rollouts.length === 0 ? (
            <p class="empty">No rollouts{status ? ` ${status}` : ''} your key may see.</p>
          ) : (
            <>
              <table>
                <caption class="sr-only">Rollouts</caption>
                <thead>
                  <tr>
                    <th scope="col">Rollout</th>
                    <th scope="col">Agent</th>
                    <th scope="col">From → to</th>
                    <th scope="col">Status</th>
                    <th scope="col">Progress</th>
                    <th scope="col">Started</th>
                  </tr>
                </thead>
                <tbody>
                  {data.rollouts.map((r) => (
                    <tr key={r.id}>
                      <td>
                        <Link href={`${BASE}/rollouts/${r.id}`}>
                          <code>{short(r.id)}</code>
                        </Link>
                      </td>
                      <td class="text">{data.names.get(r.agent_id) ?? r.agent_id}</td>
                      <td>
                        {data.versions.get(r.from_version_id)} → {data.versions.get(r.to_version_id)}
                      </td>
                      <td>
                        <Status value={r.status} />
                      </td>
                      <td>
                        step {r.step} of {r.steps.length} · {r.percent}%
                      </td>
                      <td>{when(r.created_at)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
              <ShowMore shown={data.rollouts.length} total={data.total} limit={limit} setLimit={setLimit} label="rollouts" />
            </>
          )
        }
      </Pending>
    </section>
  );
}

/** The list APIs here take a limit (at most 200), not pages: "show more" raises it. */
function ShowMore(props: { shown: number; total: number; limit: number; setLimit: (n: number) => void; label: string }) {
  return (
    <p class="muted small" aria-live="polite">
      {props.shown} of {props.total} {props.label}
      {props.shown < props.total && props.limit < 200 && (
        <>
          {' '}
          <button type="button" onClick={() => props.setLimit(Math.min(200, props.limit + MORE))}>
            Show more
          </button>
        </>
      )}
    </p>
  );
}

export function RolloutPage({ rolloutId }: { rolloutId: string }) {
  const loaded = usePoll(
    async () => {
      const rollout = await api.getRollout({ params: { rollout_id: rolloutId } });
      const [names, versions, permissions] = await Promise.all([
        agentNames(),
        versionNumbers([rollout.from_version_id, rollout.to_version_id]),
        agentPermissions(rollout.agent_id),
      ]);
      return { rollout, name: names.get(rollout.agent_id) ?? rollout.agent_id, versions, canWrite: permissions.includes('write') };
    },
    [rolloutId],
    1000,
    (d) => isActive(d.rollout.status),
  );
  useTitle('Rollout');
  return (
    <section class="rollout">
      <Pending loaded={loaded}>
        {({ rollout: r, name, versions, canWrite }) => (
          <>
            <h1>
              Rollout of <bdi class="text">{name}</bdi> {versions.get(r.from_version_id)} → {versions.get(r.to_version_id)} <Status value={r.status} />
            </h1>
            <p class="muted small">
              <code>{r.id}</code> · started {when(r.created_at)}
              {r.finished_at && <> · finished {when(r.finished_at)}</>} ·{' '}
              <Link href={`${BASE}/versions/${r.from_version_id}`}>from {versions.get(r.from_version_id)}</Link> ·{' '}
              <Link href={`${BASE}/versions/${r.to_version_id}`}>to {versions.get(r.to_version_id)}</Link> ·{' '}
              <Link href={`${BASE}/migrations?rollout_id=${r.id}`}>its migrations</Link>
            </p>
            <div class="ramp">
              <label for="rollout-progress">
                Step {r.step} of {r.steps.length}: {r.percent}% of the tasks on {versions.get(r.to_version_id)}
              </label>
              <progress id="rollout-progress" max={100} value={r.percent}>
                {r.percent}%
              </progress>
              <p class="muted small">
                Steps {r.steps.map((s) => `${s}%`).join(' → ')} · each watched {Math.round(r.watch_ms / 1000)} s · reverts when the moved tasks’ error rate
                exceeds the source’s by more than {r.max_error_rate_percent}% · new tasks: {r.new_tasks_to_target} of {r.new_tasks} sent to the target
                {r.window_ends_at && r.status === 'RUNNING' && <> · this step’s window closes {when(r.window_ends_at)}</>}
              </p>
              {r.reason && <p class="text">{r.reason}</p>}
            </div>
            {canWrite && isActive(r.status) && (
              <p class="row-actions">
                {r.status === 'RUNNING' && <Act label="Pause" act={() => api.pauseRollout({ params: { rollout_id: r.id } })} done={loaded.reload} />}
                {r.status === 'PAUSED' && <Act label="Resume" act={() => api.resumeRollout({ params: { rollout_id: r.id } })} done={loaded.reload} />}{' '}
                <Confirm
                  label="Abort…"
                  question="Abort the rollout? Its moved tasks go back to the source."
                  confirm="Abort the rollout"
                  danger
                  act={() => api.abortRollout({ params: { rollout_id: r.id } })}
                  done={loaded.reload}
                />
              </p>
            )}
            {!canWrite && isActive(r.status) && <p class="muted small">Your API key may watch this rollout but not steer it.</p>}
            <h2>Figures, step by step</h2>
            {r.report.length === 0 ? (
              <p class="empty">No step has started yet.</p>
            ) : (
              <table class="figures">
                <caption class="sr-only">Figures of each step</caption>
                <thead>
                  <tr>
                    <th scope="col">Step</th>
                    <th scope="col">Moved</th>
                    <th scope="col">Decision</th>
                    <th scope="col">Target ({versions.get(r.to_version_id)})</th>
                    <th scope="col">Source ({versions.get(r.from_version_id)})</th>
                    <th scope="col">Why</th>
                  </tr>
                </thead>
                <tbody>
                  {r.report.map((s) => (
                    <tr key={s.step} data-step={s.step}>
                      <td>
                        {s.step} · {s.percent}%
                      </td>
                      <td>{s.moved}</td>
                      <td>
                        <Status value={s.decision.toUpperCase()} />
                      </td>
                      <td>
                        <Figures f={s.target} />
                      </td>
                      <td>
                        <Figures f={s.source} />
                      </td>
                      <td class="text small">{s.reason ?? (s.decided_at ? `decided ${when(s.decided_at)}` : 'watching')}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </>
        )}
      </Pending>
    </section>
  );
}

const Figures = ({ f }: { f: RolloutFigures | null }) =>
  f ? (
    <span class="small">
      <strong>{f.error_rate_percent.toFixed(1)}%</strong> errors · {f.tasks} tasks · {f.deliveries} deliveries · {f.handler_errors} handler errors ·{' '}
      {f.delivery_failures} failed
    </span>
  ) : (
    <span class="muted small">not yet</span>
  );

export function MigrationsPage() {
  useTitle('Migration history');
  const q = useLocation().searchParams;
  const agentId = q.get('agent_id') ?? '';
  const rolloutId = q.get('rollout_id') ?? '';
  const [limit, setLimit] = useState(MORE);
  const loaded = useLoad(async () => {
    const list = await api.listMigrations({ query: { limit, ...(agentId ? { agent_id: agentId } : {}), ...(rolloutId ? { rollout_id: rolloutId } : {}) } });
    const agents = [...new Set(list.migrations.map((m) => m.agent_id))];
    const [names, versions, permissions] = await Promise.all([
      agentNames(),
      versionNumbers(list.migrations.flatMap((m) => [...m.from_version_ids, m.to_version_id])),
      Promise.all(agents.map(agentPermissions)),
    ]);
    const writable = new Set(agents.filter((_, i) => permissions[i]!.includes('write')));
    return { ...list, names, versions, writable };
  }, [agentId, rolloutId, limit]);
  return (
    <section>
      <h1>Migration history</h1>
      <p class="muted small">
        Every move of tasks between versions, newest first: migrations, rollout steps, reverts and undos. Undo moves exactly the tasks a migration moved back,
        while they are still where it left them.
        {rolloutId && (
          <>
            {' '}
            Only rollout <Link href={`${BASE}/rollouts/${rolloutId}`}>{rolloutId}</Link>.
          </>
        )}
      </p>
      <Pending loaded={loaded}>
        {(data) =>
          data.migrations.length === 0 ? (
            <p class="empty">No migrations your key may see.</p>
          ) : (
            <>
              <table>
                <caption class="sr-only">Migrations</caption>
                <thead>
                  <tr>
                    <th scope="col">When</th>
                    <th scope="col">Kind</th>
                    <th scope="col">Agent</th>
                    <th scope="col">Tasks</th>
                    <th scope="col">From → to</th>
                    <th scope="col">Why</th>
                    <th scope="col">
                      <span class="sr-only">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {data.migrations.map((m) => (
                    <MigrationRow key={m.id} m={m} data={data} onChange={loaded.reload} />
                  ))}
                </tbody>
              </table>
              <ShowMore shown={data.migrations.length} total={data.total} limit={limit} setLimit={setLimit} label="migrations" />
            </>
          )
        }
      </Pending>
    </section>
  );
}

function MigrationRow({
  m,
  data,
  onChange,
}: {
  m: MigrationRecord;
  data: { names: Map<string, string>; versions: Map<string, string>; writable: Set<string> };
  onChange: () => void;
}) {
  const kind = m.kind === 'rollout_step' ? `rollout step ${m.step}` : m.kind;
  return (
    <tr data-migration={m.id}>
      <td>{when(m.created_at)}</td>
      <td>
        {kind}
        {m.rollout_id && (
          <>
            {' '}
            <Link href={`${BASE}/rollouts/${m.rollout_id}`}>rollout</Link>
          </>
        )}
      </td>
      <td class="text">{data.names.get(m.agent_id) ?? m.agent_id}</td>
      <td>{m.count}</td>
      <td>
        {m.from_version_ids.map((v) => data.versions.get(v)).join(', ')} → {data.versions.get(m.to_version_id)}
      </td>
      <td class="text small">{m.reason ?? '—'}</td>
      <td>
        {m.undone_by_id ? (
          <span class="muted small">undone</span>
        ) : m.kind !== 'undo' && data.writable.has(m.agent_id) && m.count > 0 ? (
          <Confirm
            label="Undo…"
            question={`Move these ${m.count} ${m.count === 1 ? 'task' : 'tasks'} back?`}
            confirm="Undo the migration"
            act={() => api.undoMigration({ params: { migration_id: m.id } })}
            done={onChange}
          />
        ) : null}
      </td>
    </tr>
  );
}

export function RehearsalPage({ rehearsalId }: { rehearsalId: string }) {
  const loaded = usePoll(
    async () => {
      const rehearsal = await api.getRehearsal({ params: { rehearsal_id: rehearsalId } });
      const versions = await versionNumbers([rehearsal.to_version_id, ...(rehearsal.from_version_id ? [rehearsal.from_version_id] : [])]);
      return { rehearsal, versions };
    },
    [rehearsalId],
    1000,
    (d) => d.rehearsal.status === 'running',
  );
  useTitle('Rehearsal');
  return (
    <section class="rehearsal">
      <Pending loaded={loaded}>
        {({ rehearsal: r, versions }) => (
          <>
            <h1>
              Rehearsal on {versions.get(r.to_version_id)} <Status value={r.status.toUpperCase()} />
            </h1>
            <p class="muted small">
              <code>{r.id}</code> · started {when(r.created_at)}
              {r.completed_at && <> · completed {when(r.completed_at)}</>} · shadow tasks kept until {when(r.expires_at)}
            </p>
            <p role="status">
              {r.status === 'running'
                ? `Replaying: ${r.totals.tasks_done} of ${r.totals.tasks} tasks done, ${r.totals.events_replayed} of ${r.totals.events_planned} events.`
                : r.regressions_found
                  ? `Regressions found in ${r.totals.tasks_with_regressions} of ${r.totals.tasks} tasks: do not migrate as is.`
                  : r.differences_found
                    ? 'No regressions; some answers or states differ: read the diffs.'
                    : 'No regressions and no differences.'}
            </p>
            <dl class="facts">
              <dt>Tasks</dt>
              <dd>
                {r.totals.tasks} ({r.totals.truncated_tasks} truncated, {r.totals.skipped_tasks} skipped)
              </dd>
              <dt>Events replayed</dt>
              <dd>
                {r.totals.events_replayed} of {r.totals.events_planned}
              </dd>
              <dt>Handler errors · timeouts</dt>
              <dd>
                {r.totals.handler_errors} · {r.totals.timeouts}
              </dd>
              <dt>Differences</dt>
              <dd>
                {r.totals.message_differences} in messages · {r.totals.state_differences} in state
              </dd>
              <dt>Mean latency</dt>
              <dd>
                {ms(r.totals.original_mean_latency_ms)} original · {ms(r.totals.rehearsal_mean_latency_ms)} rehearsal
              </dd>
            </dl>
            {r.tasks.map((t) => (
              <RehearsedTask key={t.task_id} t={t} />
            ))}
          </>
        )}
      </Pending>
    </section>
  );
}

const ms = (v: number | null) => (v === null ? '—' : `${Math.round(v)} ms`);
const json = (v: unknown) => (v === undefined ? '(absent)' : JSON.stringify(v));

function RehearsedTask({ t }: { t: RehearsalTask }) {
  const differing = t.events.filter((e) => e.differences.length > 0 || e.rehearsal.handler_error || e.rehearsal.timed_out);
  return (
    <details class="rehearsed" open={t.regressions.length > 0 || differing.length > 0 || t.state_diff.length > 0}>
      <summary>
        Task {t.task_name ? <bdi class="text">{t.task_name}</bdi> : <code>{t.task_id}</code>} · {t.events_replayed} of {t.events_planned} events ·{' '}
        {t.regressions.length} regressions · {differing.length} events differ · {t.state_diff.length} state paths differ
      </summary>
      <p class="muted small">
        <Link href={`${BASE}/tasks/${t.task_id}`}>the original</Link>
        {t.shadow_task_id && (
          <>
            {' '}
            · <Link href={`${BASE}/tasks/${t.shadow_task_id}`}>its shadow</Link>
          </>
        )}{' '}
        · <span class="text">{t.start}</span>
        {t.truncated && <span class="text"> · {t.truncated}</span>}
        {t.skipped && <span class="text"> · {t.skipped}</span>}
      </p>
      {t.regressions.length > 0 && (
        <ul class="regressions">
          {t.regressions.map((g) => (
            <li key={`${g.kind}-${g.position}`}>
              <Status value="FAILED" /> {g.kind.replace('_', ' ')} at event {g.position}: <span class="text">{g.detail}</span>
            </li>
          ))}
        </ul>
      )}
      {differing.map((e) => (
        <div key={e.position} class="rehearsed-event">
          <h3 class="small">
            Event {e.position}: <span class="text">{e.summary}</span>{' '}
            <span class="muted">
              ({ms(e.original.latency_ms)} → {ms(e.rehearsal.latency_ms)})
            </span>
          </h3>
          {e.rehearsal.handler_error && <p class="text bad">Handler error: {e.rehearsal.handler_error}</p>}
          {e.rehearsal.timed_out && <p class="bad">Timed out</p>}
          {e.differences.map((d) =>
            d.text_diff ? (
              <pre key={d.index} class="diff text">
                {d.text_diff.map((line, i) => (
                  <span key={i} class={line.startsWith('+') ? 'add' : line.startsWith('-') ? 'del' : ''}>
                    {line}
                    {'\n'}
                  </span>
                ))}
              </pre>
            ) : (
              <pre key={d.index} class="diff text">
                <span class="del">- {json(d.original)}</span>
                {'\n'}
                <span class="add">+ {json(d.rehearsal)}</span>
              </pre>
            ),
          )}
        </div>
      ))}
      {t.state_diff.length > 0 && (
        <table class="state-diff">
          <caption>State differences</caption>
          <thead>
            <tr>
              <th scope="col">Path</th>
              <th scope="col">Original</th>
              <th scope="col">Rehearsal</th>
            </tr>
          </thead>
          <tbody>
            {t.state_diff.map((d) => (
              <tr key={d.path}>
                <td>
                  <code class="text">{d.path}</code>
                </td>
                <td class="text del">{json(d.original)}</td>
                <td class="text add">{json(d.rehearsal)}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </details>
  );
}

/** On a version's page (write on its agent): rehearse moving its tasks to the branch's current version, or roll them out there. */
export function MigrateFrom({ versionId, agentId, targetId, targetLabel }: { versionId: string; agentId: string; targetId: string; targetLabel: string }) {
  const [canWrite, setCanWrite] = useState(false);
  const [steps, setSteps] = useState('25, 50, 100');
  const [watch, setWatch] = useState('30s');
  const [threshold, setThreshold] = useState('2');
  useEffect(() => {
    agentPermissions(agentId).then((p) => setCanWrite(p.includes('write')));
  }, [agentId]);
  if (!canWrite || targetId === versionId) return null;
  return (
    <section aria-labelledby="migrate-title" class="migrate">
      <h2 id="migrate-title">Move its tasks to {targetLabel}</h2>
      <p>
        <Act
          label={`Rehearse on ${targetLabel}`}
          act={async () => {
            const r: Rehearsal = await api.createRehearsal({ body: { from_version_id: versionId, to_version_id: targetId } });
            navigate(`${BASE}/rehearsals/${r.id}`);
          }}
        />{' '}
        <span class="muted small">replays its tasks’ recorded events on shadow copies; nothing moves.</span>
      </p>
      <form class="filters" aria-label="Start a rollout" onSubmit={(e) => e.preventDefault()}>
        <label>
          Steps (%)
          <input value={steps} onInput={(e) => setSteps(e.currentTarget.value)} />
        </label>
        <label>
          Watch each
          <input value={watch} size={6} onInput={(e) => setWatch(e.currentTarget.value)} />
        </label>
        <label>
          Max error rate above the source (%)
          <input value={threshold} size={4} inputMode="decimal" onInput={(e) => setThreshold(e.currentTarget.value)} />
        </label>
        <Act
          label="Start the rollout"
          class="primary"
          act={async () => {
            const r: Rollout = await api.createRollout({
              body: {
                from_version_id: versionId,
                to_version_id: targetId,
                to_latest: false,
                steps: steps
                  .split(/[\s,]+/)
                  .filter(Boolean)
                  .map(Number),
                watch: watch.trim(),
                max_error_rate_percent: Number(threshold),
              },
            });
            navigate(`${BASE}/rollouts/${r.id}`);
          }}
        />
      </form>
    </section>
  );
}
