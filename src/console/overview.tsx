import { TASK_STATUSES, type TaskStatus } from '../contract/lifecycle.js';
import { api } from './api.js';
import { BASE, useSession } from './session.js';
import { Link, Pending, Status, useLoad, useTitle } from './ui.js';

/** Live work first, then how tasks ended. */
const FIRST: TaskStatus[] = ['RUNNING', 'IDLE', 'COMPLETED', 'FAILED'];
const COUNTED = [...FIRST, ...TASK_STATUSES.filter((s) => s !== 'DELETED' && !FIRST.includes(s))];

/** Counts of what the key may see: agents, and tasks by status. */
export function Overview() {
  useTitle('Overview');
  const { session } = useSession();
  const loaded = useLoad(async () => {
    const [agents, ready, ...tasks] = await Promise.all([
      api.listAgents({ query: { limit: 1 } }),
      api.readyz(),
      ...COUNTED.map((status) => api.listTasks({ query: { status, limit: 1 } })),
    ]);
    return { agents: agents.total, engine: ready.engine, tasks: COUNTED.map((status, i) => ({ status, total: tasks[i]!.total ?? 0 })) };
  }, []);
  return (
    <section>
      <h1>Overview</h1>
      <Pending loaded={loaded}>
        {(data) => (
          <>
            <ul class="cards" aria-label="Counts">
              <li class="card">
                <Link href={`${BASE}/agents`}>
                  <span class="count">{data.agents}</span> {data.agents === 1 ? 'agent' : 'agents'}
                </Link>
              </li>
              {data.tasks.map((t) => (
                <li class="card" key={t.status}>
                  <Link href={`${BASE}/tasks?status=${t.status}`}>
                    <span class="count">{t.total}</span> <Status value={t.status} /> {t.total === 1 ? 'task' : 'tasks'}
                  </Link>
                </li>
              ))}
            </ul>
            <dl class="facts">
              <dt>Key</dt>
              <dd>
                <bdi class="text">{session.key.name}</bdi> <code>{session.key.key_prefix}…</code> {session.org_admin ? '(org admin)' : ''}
              </dd>
              <dt>Scopes</dt>
              <dd>{session.key.scopes.map((s) => `${s.resource_type}:${s.resource_id}:${s.role}`).join(', ') || 'none'}</dd>
              <dt>Database</dt>
              <dd>{data.engine}</dd>
              <dt>Session ends</dt>
              <dd>{new Date(session.expires_at).toLocaleString()}</dd>
            </dl>
          </>
        )}
      </Pending>
    </section>
  );
}
