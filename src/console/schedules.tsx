// Schedules: the list with each one's next run, a page at a time; pause, resume, run now and delete
// where the key may run the agent's tasks.
import { useState } from 'preact/hooks';
import type { Schedule } from '../contract/schedules.js';
import { api } from './api.js';
import { BASE } from './session.js';
import { Act, agentNames, agentPermissions, Confirm, Link, Pager, Pending, Status, useLoad, useLocation, useTitle, when } from './ui.js';

const PAGE = 25;

export function SchedulesPage() {
  useTitle('Schedules');
  const agentId = useLocation().searchParams.get('agent_id') ?? '';
  const [page, setPage] = useState(1);
  const loaded = useLoad(async () => {
    const list = await api.listSchedules({ query: { limit: PAGE, page_number: page, ...(agentId ? { agent_id: agentId } : {}) } });
    const agents = [...new Set(list.schedules.map((s) => s.agent_id))];
    const [names, permissions] = await Promise.all([agentNames(), Promise.all(agents.map(agentPermissions))]);
    return { ...list, names, runnable: new Set(agents.filter((_, i) => permissions[i]!.includes('run'))) };
  }, [page, agentId]);
  return (
    <section>
      <h1>Schedules</h1>
      <p class="muted small">
        Each tick creates a task, or sends an event to a named task. Create them with <code>agentctl schedules create</code>.
      </p>
      <Pending loaded={loaded}>
        {(data) =>
          data.schedules.length === 0 ? (
            <p class="empty">No schedules your key may see.</p>
          ) : (
            <>
              <table>
                <caption class="sr-only">Schedules</caption>
                <thead>
                  <tr>
                    <th scope="col">Schedule</th>
                    <th scope="col">Agent</th>
                    <th scope="col">When</th>
                    <th scope="col">Status</th>
                    <th scope="col">Next run</th>
                    <th scope="col">Last run</th>
                    <th scope="col">
                      <span class="sr-only">Actions</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {data.schedules.map((s) => (
                    <ScheduleRow
                      key={s.id}
                      s={s}
                      agent={data.names.get(s.agent_id) ?? s.agent_id}
                      canRun={data.runnable.has(s.agent_id)}
                      onChange={loaded.reload}
                    />
                  ))}
                </tbody>
              </table>
              <Pager label="Schedules" page={page} limit={PAGE} total={data.total} shown={data.schedules.length} onPage={setPage} />
            </>
          )
        }
      </Pending>
    </section>
  );
}

function ScheduleRow({ s, agent, canRun, onChange }: { s: Schedule; agent: string; canRun: boolean; onChange: () => void }) {
  const label = s.name ?? s.id;
  const [ran, setRan] = useState<string | null | undefined>();
  return (
    <tr data-schedule={s.id}>
      <td>
        <bdi class="text">{label}</bdi>
        <div class="muted small">{s.task_name ? <span class="text">sends an event to {s.task_name}</span> : 'creates a task'}</div>
      </td>
      <td class="text">
        <Link href={`${BASE}/agents/${s.agent_id}`}>{agent}</Link>
      </td>
      <td>
        <code>{s.cron}</code> <span class="muted small">{s.timezone}</span>
      </td>
      <td>
        <Status value={s.status} />
      </td>
      <td>{s.status === 'PAUSED' ? 'paused' : when(s.next_run_at)}</td>
      <td>
        {when(s.last_run_at)}
        {s.last_error && <div class="small bad text">{s.last_error}</div>}
        {ran && (
          <div class="small">
            <Link href={`${BASE}/tasks/${ran}`}>the task it ran</Link>
          </div>
        )}
      </td>
      <td>
        {canRun && (
          <div class="row-actions">
            {s.status === 'ACTIVE' ? (
              <Act label="Pause" aria-label={`Pause ${label}`} act={() => api.pauseSchedule({ params: { schedule_id: s.id } })} done={onChange} />
            ) : (
              <Act label="Resume" aria-label={`Resume ${label}`} act={() => api.resumeSchedule({ params: { schedule_id: s.id } })} done={onChange} />
            )}
            <Act
              label="Run now"
              aria-label={`Run ${label} now`}
              act={async () => {
                const tick = await api.triggerSchedule({ params: { schedule_id: s.id } });
                setRan(tick.task_id);
              }}
              done={onChange}
            />
            <Confirm
              label="Delete…"
              question={`Delete ${label}? Its tasks stay.`}
              confirm={`Delete ${label} now`}
              danger
              act={() => api.deleteSchedule({ params: { schedule_id: s.id } })}
              done={onChange}
            />
          </div>
        )}
      </td>
    </tr>
  );
}
