// A version's logs, followed live (GET /versions/{id}/logs?follow=true through the client), filtered
// by version, replica and task. The filters live in the address; lines are kept up to a cap and
// shown in a virtualised list that follows the end while it is at the bottom.
import { useEffect, useReducer, useRef, useState } from 'preact/hooks';
import type { VersionLogLine } from '../contract/runtime.js';
import { api } from './api.js';
import { BASE } from './session.js';
import { ErrorBox, Link, navigate, Pending, useLoad, useLocation, useTitle } from './ui.js';
import { VirtualList } from './virtual.js';

const KEEP = 5000;
const TAIL = 200;

type Line = VersionLogLine & { key: string };

export function LogsPage() {
  useTitle('Logs');
  const q = useLocation().searchParams;
  const versionId = q.get('version_id') ?? '';
  const replica = q.get('replica') ?? '';
  const taskId = q.get('task_id') ?? '';
  const [draftTask, setDraftTask] = useState(taskId);
  const go = (next: Record<string, string>) => {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries({ version_id: versionId, replica, task_id: taskId, ...next })) if (v) params.set(k, v);
    navigate(`${BASE}/logs?${params}`, true);
  };
  const loaded = useLoad(async () => {
    if (!versionId) return null;
    const version = await api.getVersion({ params: { version_id: versionId } });
    const siblings = await api.listBranchVersions({ params: { branch_id: version.branch_id } });
    return { version, versions: siblings.versions };
  }, [versionId]);
  return (
    <section>
      <h1>Logs</h1>
      {!versionId && (
        <p>
          Open the logs of a version from its page (<Link href={`${BASE}/agents`}>Agents</Link> → a version → Logs), or of a task from the task’s page.
        </p>
      )}
      <Pending loaded={loaded}>
        {(data) =>
          data && (
            <>
              <form
                class="filters"
                aria-label="Filter logs"
                onSubmit={(e) => {
                  e.preventDefault();
                  go({ task_id: draftTask.trim() });
                }}
              >
                <label>
                  Version
                  <select value={versionId} onChange={(e) => go({ version_id: e.currentTarget.value })}>
                    {data.versions.map((v) => (
                      <option key={v.id} value={v.id}>
                        v{v.number} · {v.status}
                      </option>
                    ))}
                  </select>
                </label>
                <label>
                  Replica
                  <select value={replica} onChange={(e) => go({ replica: e.currentTarget.value })}>
                    <option value="">all</option>
                    {Array.from({ length: Math.max(1, data.version.replicas) }, (_, i) => (
                      <option key={i} value={String(i)}>
                        {i}
                      </option>
                    ))}
                  </select>
                </label>
                <label>
                  Task
                  <input placeholder="task_… (its structured lines)" value={draftTask} onInput={(e) => setDraftTask(e.currentTarget.value)} />
                </label>
                <button type="submit">Filter</button>
              </form>
              <Follow key={`${versionId} ${taskId}`} versionId={versionId} taskId={taskId} replica={replica === '' ? undefined : Number(replica)} />
            </>
          )
        }
      </Pending>
    </section>
  );
}

function Follow({ versionId, taskId, replica }: { versionId: string; taskId: string; replica?: number }) {
  const lines = useRef<Line[]>([]);
  const [, redraw] = useReducer((n: number) => n + 1, 0);
  const [state, setState] = useState<'connecting' | 'following' | 'ended'>('connecting');
  const [error, setError] = useState<unknown>();
  const [round, again] = useReducer((n: number) => n + 1, 0);
  useEffect(() => {
    const controller = new AbortController();
    let frame = 0;
    let n = 0;
    lines.current = [];
    setError(undefined);
    setState('connecting');
    (async () => {
      try {
        const stream = api.followVersionLogs(versionId, { tail: TAIL, ...(taskId ? { task_id: taskId } : {}) }, { signal: controller.signal });
        setState('following');
        for await (const line of stream) {
          lines.current.push({ ...line, key: String(n++) });
          if (lines.current.length > KEEP) lines.current.splice(0, lines.current.length - KEEP);
          if (!frame)
            frame = requestAnimationFrame(() => {
              frame = 0;
              redraw(0);
            });
        }
        if (!controller.signal.aborted) setState('ended');
      } catch (e) {
        if (!controller.signal.aborted) {
          setError(e);
          setState('ended');
        }
      }
    })();
    return () => {
      controller.abort();
      cancelAnimationFrame(frame);
    };
  }, [versionId, taskId, round]);
  const shown = replica === undefined ? lines.current : lines.current.filter((l) => l.replica === replica);
  return (
    <>
      <p class={`link ${state === 'following' ? 'live' : ''}`} role="status">
        {state === 'connecting' ? 'Connecting…' : state === 'following' ? `Following · ${shown.length} lines` : 'The log stream has ended'}{' '}
        {state === 'ended' && (
          <button type="button" onClick={again}>
            Follow again
          </button>
        )}
      </p>
      {error !== undefined && <ErrorBox error={error} />}
      <VirtualList
        items={shown}
        keyOf={(l) => l.key}
        estimate={20}
        class="logs-box"
        listClass="loglines"
        empty={state === 'connecting' ? undefined : 'No lines yet.'}
        box={{ role: 'log', 'aria-label': 'Log lines' }}
        render={(l) => (
          <div class={`logline ${l.stream}`} data-replica={l.replica}>
            <time class="muted">{l.time.slice(11, 23)}</time>
            <span class="muted">
              r{l.replica} {l.stream === 'stderr' ? 'err' : 'out'}
            </span>
            <span class="line text">{l.line}</span>
          </div>
        )}
      />
    </>
  );
}
