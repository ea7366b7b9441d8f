// Tasks, filtered by status, agent and name, newest first, a page at a time. The filters live in
// the address, so a filtered list can be bookmarked and `back` returns to it.
import { useState } from 'preact/hooks';
import { TASK_STATUSES, type TaskStatus } from '../contract/lifecycle.js';
import { api } from './api.js';
import { BASE } from './session.js';
import { Link, navigate, Pager, Pending, Status, useLoad, useLocation, useTitle, when } from './ui.js';

const PAGE = 25;

export function TasksPage() {
  useTitle('Tasks');
  const url = useLocation();
  const q = url.searchParams;
  const status = (q.get('status') ?? '') as TaskStatus | '';
  const agent = q.get('agent') ?? '';
  const agentId = q.get('agent_id') ?? '';
  const versionId = q.get('version_id') ?? '';
  const name = q.get('name') ?? '';
  const page = Math.max(1, Number(q.get('page') ?? 1) || 1);
  const [draft, setDraft] = useState({ status, agent, name });

  const go = (next: Record<string, string | number>) => {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries({ status, agent, agent_id: agentId, version_id: versionId, name, page, ...next }))
      if (v !== '' && v !== 1) params.set(k, String(v));
    navigate(`${BASE}/tasks${params.size ? `?${params}` : ''}`);
  };

  const loaded = useLoad(async () => {
    if (name) {
      // A name names one task: ask for it.
      const task = await api.getTaskByName({ params: { task_name: name } }).catch((e) => {
        if ((e as { status?: number }).status === 404) return null;
        throw e;
      });
      return { tasks: task ? [task] : [], total: task ? 1 : 0 };
    }
    return api.listTasks({
      query: {
        limit: PAGE,
        page_number: page,
        ...(status ? { status } : {}),
        ...(agent ? { agent_name: agent } : {}),
        ...(agentId ? { agent_id: agentId } : {}),
        ...(versionId ? { version_id: versionId } : {}),
        relationships: ['agents'],
      },
    });
  }, [status, agent, agentId, versionId, name, page]);

  return (
    <section>
      <h1>Tasks</h1>
      <form
        class="filters"
        aria-label="Filter tasks"
        onSubmit={(e) => {
          e.preventDefault();
          go({ ...draft, page: 1 });
        }}
      >
        <label>
          Status
          <select value={draft.status} onChange={(e) => setDraft({ ...draft, status: e.currentTarget.value as TaskStatus | '' })}>
            <option value="">any</option>
            {TASK_STATUSES.map((s) => (
              <option key={s} value={s}>
                {s}
              </option>
            ))}
          </select>
        </label>
        <label>
          Agent
          <input placeholder="namespace/name" value={draft.agent} onInput={(e) => setDraft({ ...draft, agent: e.currentTarget.value })} />
        </label>
        <label>
          Name
          <input placeholder="task name" value={draft.name} onInput={(e) => setDraft({ ...draft, name: e.currentTarget.value })} />
        </label>
        <button type="submit">Filter</button>
        {(status || agent || name || agentId || versionId) && (
          <button
            type="button"
            onClick={() => {
              setDraft({ status: '', agent: '', name: '' });
              navigate(`${BASE}/tasks`);
            }}
          >
            Clear
          </button>
        )}
      </form>
      {(agentId || versionId) && <p class="muted small">Only the tasks of {agentId ? `agent ${agentId}` : `version ${versionId}`}.</p>}
      <Pending loaded={loaded}>
        {(data) =>
          data.tasks.length === 0 ? (
            <p class="empty">No tasks match.</p>
          ) : (
            <>
              <table>
                <caption class="sr-only">Tasks</caption>
                <thead>
                  <tr>
                    <th scope="col">Task</th>
                    <th scope="col">Agent</th>
                    <th scope="col">Status</th>
                    <th scope="col">Created</th>
                    <th scope="col">Updated</th>
                  </tr>
                </thead>
                <tbody>
                  {data.tasks.map((t) => (
                    <tr key={t.id}>
                      <td>
                        <Link href={`${BASE}/tasks/${t.id}`}>{t.name ? <bdi class="text">{t.name}</bdi> : <code>{t.id}</code>}</Link>
                      </td>
                      <td class="text">{t.agents?.map((a) => a.name).join(', ') ?? '—'}</td>
                      <td>
                        <Status value={t.status} />
                      </td>
                      <td>{when(t.created_at)}</td>
                      <td>{when(t.updated_at)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
              <Pager label="Tasks" page={page} limit={PAGE} total={data.total} shown={data.tasks.length} onPage={(p) => go({ page: p })} />
            </>
          )
        }
      </Pending>
    </section>
  );
}
