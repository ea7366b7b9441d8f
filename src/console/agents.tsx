// Agents -> branches -> versions, with each version's lifecycle, replicas, health and diagnostics.
import { useState } from 'preact/hooks';
import type { Branch, Version } from '../contract/resources.js';
import { api } from './api.js';
import { BASE } from './session.js';
import { MigrateFrom } from './rollouts.js';
import { AgentSecrets } from './secrets.js';
import { agentPermissions, ErrorBox, Link, Pager, Pending, Status, useLoad, useTitle, when } from './ui.js';

const PAGE = 25;

export function AgentsPage() {
  useTitle('Agents');
  const [page, setPage] = useState(1);
  const loaded = useLoad(async () => {
    const [agents, namespaces] = await Promise.all([
      api.listAgents({ query: { limit: PAGE, page_number: page } }),
      api.listNamespaces({ query: { limit: 1000 } }),
    ]);
    const slugs = new Map(namespaces.namespaces.map((n) => [n.id, n.slug]));
    return { ...agents, slugs };
  }, [page]);
  return (
    <section>
      <h1>Agents</h1>
      <Pending loaded={loaded}>
        {(data) =>
          data.agents.length === 0 ? (
            <p class="empty">
              No agents your key may see. Deploy one with <code>agentctl deploy</code>.
            </p>
          ) : (
            <>
              <table>
                <caption class="sr-only">Agents</caption>
                <thead>
                  <tr>
                    <th scope="col">Agent</th>
                    <th scope="col">Description</th>
                    <th scope="col">Status</th>
                    <th scope="col">Created</th>
                  </tr>
                </thead>
                <tbody>
                  {data.agents.map((a) => (
                    <tr key={a.id}>
                      <td>
                        <Link href={`${BASE}/agents/${a.id}`}>
                          {data.slugs.get(a.namespace_id) ?? a.namespace_id}/{a.name}
                        </Link>
                      </td>
                      <td class="text">{a.description}</td>
                      <td>
                        <Status value={a.status} />
                      </td>
                      <td>{when(a.created_at)}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
              <Pager label="Agents" page={page} limit={PAGE} total={data.total} shown={data.agents.length} onPage={setPage} />
            </>
          )
        }
      </Pending>
    </section>
  );
}

export function AgentPage({ agentId }: { agentId: string }) {
  const loaded = useLoad(async () => {
    const agent = await api.getAgent({ params: { agent_id: agentId } });
    const namespaces = await api.listNamespaces({ query: { limit: 1000 } });
    const slug = namespaces.namespaces.find((n) => n.id === agent.namespace_id)?.slug ?? 'default';
    const { branches } = await api.listAgentBranches({ params: { namespace_slug: slug, agent_name: agent.name }, query: { include_retired: 'true' } });
    const [versions, permissions] = await Promise.all([
      Promise.all(branches.map((b) => api.listBranchVersions({ params: { branch_id: b.id } }))),
      agentPermissions(agent.id),
    ]);
    return { agent, slug, permissions, branches: branches.map((b, i) => ({ branch: b, versions: versions[i]!.versions })) };
  }, [agentId]);
  useTitle(loaded.data ? `${loaded.data.slug}/${loaded.data.agent.name}` : 'Agent');
  return (
    <section>
      <Pending loaded={loaded}>
        {(data) => (
          <>
            <h1>
              {data.slug}/{data.agent.name} <Status value={data.agent.status} />
            </h1>
            {data.agent.description && <p class="text">{data.agent.description}</p>}
            <p>
              <Link href={`${BASE}/tasks?agent_id=${data.agent.id}`}>Tasks of this agent</Link> ·{' '}
              <Link href={`${BASE}/rollouts?agent_id=${data.agent.id}`}>its rollouts</Link> ·{' '}
              <Link href={`${BASE}/migrations?agent_id=${data.agent.id}`}>its migration history</Link> ·{' '}
              <Link href={`${BASE}/schedules?agent_id=${data.agent.id}`}>its schedules</Link>
            </p>
            {data.branches.length === 0 && <p class="empty">No branches yet.</p>}
            {data.branches.map(({ branch, versions }) => (
              <BranchBlock key={branch.id} branch={branch} versions={versions} canWrite={data.permissions.includes('write')} onChange={loaded.reload} />
            ))}
            {data.permissions.includes('write') && <AgentSecrets slug={data.slug} name={data.agent.name} />}
          </>
        )}
      </Pending>
    </section>
  );
}

function BranchBlock({ branch, versions, canWrite, onChange }: { branch: Branch; versions: Version[]; canWrite: boolean; onChange: () => void }) {
  const current = versions.find((v) => v.id === branch.current_version?.id);
  // The versions a rollback may go to: any other of the branch that did not fail to deploy (the server
  // says so in words when an image has expired), newest first as listed.
  const targets = current ? versions.filter((v) => v.id !== current.id && v.status !== 'FAILED') : [];
  return (
    <section class="branch" aria-labelledby={`branch-${branch.id}`}>
      <h2 id={`branch-${branch.id}`}>
        Branch <bdi class="text">{branch.git_branch}</bdi> {branch.retired_at ? <Status value="RETIRED" /> : null}
        <span class="muted small">
          {' '}
          · {branch.replicas} {branch.replicas === 1 ? 'replica' : 'replicas'} wanted
        </span>
      </h2>
      <table>
        <caption class="sr-only">Versions of branch {branch.git_branch}</caption>
        <thead>
          <tr>
            <th scope="col">Version</th>
            <th scope="col">Status</th>
            <th scope="col">Replicas</th>
            <th scope="col">Commit</th>
            <th scope="col">Deployed</th>
            <th scope="col">Diagnostics</th>
          </tr>
        </thead>
        <tbody>
          {versions.map((v) => (
            <tr key={v.id}>
              <td>
                <Link href={`${BASE}/versions/${v.id}`}>v{v.number}</Link>
                {branch.current_version?.id === v.id && <span class="muted small"> current</span>}
              </td>
              <td>
                <Status value={v.status} />
              </td>
              <td>{v.replicas}</td>
              <td>
                <code>{v.git_hash.slice(0, 8)}</code> <span class="text">{v.git_message.split('\n')[0]}</span>
              </td>
              <td>{when(v.deployed_at)}</td>
              <td class="text">{v.failure_reason ?? '—'}</td>
            </tr>
          ))}
        </tbody>
      </table>
      {canWrite && !branch.retired_at && targets.length > 0 && <Rollback branch={branch} targets={targets} onDone={onChange} />}
    </section>
  );
}

/**
 * Roll the branch back, as `agentctl rollback` does: the plan first (the same request with
 * dry_run), then the rollback once confirmed. Without a choice, the server picks the newest earlier
 * version whose image has not expired.
 */
function Rollback({ branch, targets, onDone }: { branch: Branch; targets: Version[]; onDone: () => void }) {
  const [target, setTarget] = useState('');
  const [plan, setPlan] = useState<RollbackPlan>();
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const [done, setDone] = useState<string>();
  const request = (dryRun: boolean) => api.rollbackBranch({ params: { branch_id: branch.id }, body: { target_version_id: target || null, dry_run: dryRun } });
  const run = async (step: () => Promise<void>) => {
    setBusy(true);
    setError(undefined);
    try {
      await step();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  const selectId = `rollback-to-${branch.id}`;
  return (
    <div class="rollback">
      <form
        class="filters"
        aria-label={`Roll back ${branch.git_branch}`}
        onSubmit={(e) => {
          e.preventDefault();
          void run(async () => {
            setDone(undefined);
            const planned = await request(true);
            const from = await api.getVersion({ params: { version_id: planned.rolled_back_version_id } });
            setPlan({ ...planned, fromNumber: from.number });
          });
        }}
      >
        <label for={selectId}>Roll back to</label>
        <select
          id={selectId}
          value={target}
          onChange={(e) => {
            setTarget(e.currentTarget.value);
            setPlan(undefined);
          }}
        >
          <option value="">the newest earlier version still available</option>
          {targets.map((v) => (
            <option key={v.id} value={v.id}>
              v{v.number} · {v.git_hash.slice(0, 8)} · {v.git_message.split('\n')[0]}
            </option>
          ))}
        </select>
        <button type="submit" disabled={busy}>
          Plan the rollback…
        </button>
      </form>
      {plan && (
        <section class="plan" aria-label="Rollback plan">
          <p>
            Plan: branch <bdi class="text">{branch.git_branch}</bdi> goes from v{plan.fromNumber} back to v{plan.target_version.number} (
            <code>{plan.target_version.git_hash.slice(0, 8)}</code> <span class="text">{plan.target_version.git_message.split('\n')[0]}</span>, deployed{' '}
            {when(plan.target_version.deployed_at)}); {plan.tasks_migrated} running {plan.tasks_migrated === 1 ? 'task moves' : 'tasks move'} with it.
          </p>
          <p class="muted small">Not rolled back: state records, API keys, environments and tasks that already ended stay as they are.</p>
          <button
            type="button"
            class="danger"
            disabled={busy}
            onClick={() =>
              run(async () => {
                const applied = await request(false);
                setPlan(undefined);
                setDone(
                  `Rolled back ${branch.git_branch}: v${plan.fromNumber} → v${applied.target_version.number} (${applied.tasks_migrated} ${applied.tasks_migrated === 1 ? 'task' : 'tasks'} moved)`,
                );
                onDone();
              })
            }
          >
            Roll back to v{plan.target_version.number}
          </button>{' '}
          <button type="button" onClick={() => setPlan(undefined)}>
            Keep v{plan.fromNumber}
          </button>
        </section>
      )}
      {done && (
        <p class="notice" role="status">
          {done}
        </p>
      )}
      {error !== undefined && <ErrorBox error={error} />}
    </div>
  );
}

type RollbackPlan = Awaited<ReturnType<typeof api.rollbackBranch>> & { fromNumber: number };

export function VersionPage({ versionId }: { versionId: string }) {
  const loaded = useLoad(async () => {
    const version = await api.getVersion({ params: { version_id: versionId } });
    const [branch, events] = await Promise.all([
      api.getBranch({ params: { branch_id: version.branch_id } }),
      api.listVersionEvents({ params: { version_id: versionId } }).catch(() => null),
    ]);
    const currentId = branch.current_version?.id;
    const current = currentId && currentId !== versionId ? await api.getVersion({ params: { version_id: currentId } }).catch(() => null) : null;
    return { version, branch, events, current };
  }, [versionId]);
  useTitle(loaded.data ? `v${loaded.data.version.number}` : 'Version');
  return (
    <section>
      <Pending loaded={loaded}>
        {({ version, branch, events, current }) => (
          <>
            <h1>
              Version v{version.number} <Status value={version.status} />
            </h1>
            <p>
              <Link href={`${BASE}/agents/${branch.agent_id}`}>Back to the agent</Link> ·{' '}
              <Link href={`${BASE}/tasks?version_id=${version.id}`}>Tasks on this version</Link> ·{' '}
              <Link href={`${BASE}/logs?version_id=${version.id}`}>Logs</Link>
            </p>
            <dl class="facts">
              <dt>Branch</dt>
              <dd class="text">{version.git_branch}</dd>
              <dt>Commit</dt>
              <dd>
                <code>{version.git_hash}</code> <span class="text">{version.git_message}</span>
              </dd>
              <dt>Author</dt>
              <dd class="text">
                {version.author_name} &lt;{version.author_email}&gt;
              </dd>
              <dt>Replicas</dt>
              <dd>{version.replicas}</dd>
              <dt>Deployed</dt>
              <dd>{when(version.deployed_at)}</dd>
              <dt>Image</dt>
              <dd class="text">{version.image_url}</dd>
              {version.retired_at && (
                <>
                  <dt>Retired</dt>
                  <dd>{when(version.retired_at)}</dd>
                </>
              )}
              {version.failure_reason && (
                <>
                  <dt>Failure</dt>
                  <dd class="text">{version.failure_reason}</dd>
                </>
              )}
            </dl>
            {version.failure_diagnostics && (
              <>
                <h2>Diagnostics</h2>
                <dl class="facts">
                  {Object.entries(version.failure_diagnostics).map(([k, v]) => (
                    <>
                      <dt key={k}>{k}</dt>
                      <dd>
                        <pre class="text">{v}</pre>
                      </dd>
                    </>
                  ))}
                </dl>
              </>
            )}
            {current && <MigrateFrom versionId={version.id} agentId={branch.agent_id} targetId={current.id} targetLabel={`v${current.number}`} />}
            {events && events.events.length > 0 && (
              <>
                <h2>Lifecycle</h2>
                <ol class="timeline">
                  {events.events.map((e) => (
                    <li key={e.id}>
                      <time>{when(e.created_at)}</time> <strong>{e.type}</strong> <span class="text small">{JSON.stringify(e.data)}</span>
                    </li>
                  ))}
                </ol>
              </>
            )}
          </>
        )}
      </Pending>
    </section>
  );
}
