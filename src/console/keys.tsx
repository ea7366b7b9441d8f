// API keys (org admins): the list, revoking, and the spec's four-step creation: 1 preset, 2 scopes,
// 3 sharing groups, 4 review (name, description, expiry) and create. The secret is shown once.
import { useState } from 'preact/hooks';
import type { ResourceType, Role } from '../contract/common.js';
import { ROLES_BY_RESOURCE_TYPE } from '../contract/enums.js';
import type { ApiKey, Preset, Scope } from '../contract/resources.js';
import { api } from './api.js';
import { BASE, useSession } from './session.js';
import { ErrorBox, Link, navigate, Pager, Pending, useLoad, useTitle, when } from './ui.js';

const PAGE = 25;

export function KeysPage() {
  useTitle('API keys');
  const { session } = useSession();
  const [page, setPage] = useState(1);
  const [showRevoked, setShowRevoked] = useState(false);
  const [rotated, setRotated] = useState<{ api_key: ApiKey; secret: string } | undefined>();
  const loaded = useLoad(() => api.listKeys({ query: { include_revoked: showRevoked ? 'true' : 'false' } }), [showRevoked]);
  if (!session.org_admin) return <NotAdmin />;
  if (rotated) return <SecretOnce created={rotated} rotated onBack={() => setRotated(undefined)} />;
  return (
    <section>
      <h1>API keys</h1>
      <p>
        <Link class="button primary" href={`${BASE}/keys/new`}>
          Create a key
        </Link>{' '}
        <label class="inline">
          <input type="checkbox" checked={showRevoked} onChange={(e) => setShowRevoked(e.currentTarget.checked)} /> Show revoked keys
        </label>
      </p>
      <Pending loaded={loaded}>
        {(data) => (
          <>
            <table>
              <caption class="sr-only">API keys</caption>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Prefix</th>
                  <th scope="col">Scopes</th>
                  <th scope="col">Last used</th>
                  <th scope="col">Expires</th>
                  <th scope="col">
                    <span class="sr-only">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {data.api_keys.slice((page - 1) * PAGE, page * PAGE).map((k) => (
                  <KeyRow key={k.id} apiKey={k} self={k.id === session.key.id} onChange={loaded.reload} onRotated={setRotated} />
                ))}
              </tbody>
            </table>
            <Pager label="API keys" page={page} limit={PAGE} total={data.total} shown={Math.min(PAGE, data.total - (page - 1) * PAGE)} onPage={setPage} />
          </>
        )}
      </Pending>
    </section>
  );
}

const NotAdmin = () => (
  <section>
    <h1>API keys</h1>
    <p>Only org admins manage API keys; yours is not one.</p>
  </section>
);

function KeyRow({
  apiKey,
  self,
  onChange,
  onRotated,
}: {
  apiKey: ApiKey;
  self: boolean;
  onChange: () => void;
  onRotated: (rotated: { api_key: ApiKey; secret: string }) => void;
}) {
  const [asking, setAsking] = useState<'revoke' | 'rotate' | false>(false);
  const [error, setError] = useState<unknown>();
  return (
    <tr data-key={apiKey.id}>
      <td>
        <bdi class="text">{apiKey.name}</bdi> {self && <span class="muted small">(this session’s key)</span>}
        {apiKey.description && <div class="muted small text">{apiKey.description}</div>}
      </td>
      <td>
        <code>{apiKey.key_prefix}…</code>
      </td>
      <td class="small">{apiKey.scopes.map((s) => `${s.resource_type}:${s.resource_id}:${s.role}`).join(', ')}</td>
      <td>{when(apiKey.last_used_at)}</td>
      <td>{apiKey.revoked_at ? `revoked ${when(apiKey.revoked_at)}` : apiKey.expires_at ? when(apiKey.expires_at) : 'never'}</td>
      <td>
        {error !== undefined && <ErrorBox error={error} />}
        {!apiKey.revoked_at &&
          (asking === 'revoke' ? (
            <>
              <button
                type="button"
                class="danger"
                aria-label={`Revoke ${apiKey.name} now`}
                onClick={async () => {
                  try {
                    await api.revokeKey({ params: { key_id: apiKey.id } });
                    setAsking(false);
                    onChange();
                  } catch (e) {
                    setError(e);
                  }
                }}
              >
                Revoke now
              </button>{' '}
              <button type="button" onClick={() => setAsking(false)}>
                Keep
              </button>
            </>
          ) : asking === 'rotate' ? (
            <>
              <span class="small">A new secret; the old one stops working{self ? ' (this session stays)' : ''}.</span>{' '}
              <button
                type="button"
                class="primary"
                aria-label={`Rotate ${apiKey.name} now`}
                onClick={async () => {
                  try {
                    const rotated = await api.rotateKey({ params: { key_id: apiKey.id } });
                    setAsking(false);
                    onRotated(rotated);
                  } catch (e) {
                    setError(e);
                  }
                }}
              >
                Rotate now
              </button>{' '}
              <button type="button" onClick={() => setAsking(false)}>
                Keep
              </button>
            </>
          ) : (
            <>
              <button type="button" aria-label={`Rotate ${apiKey.name}`} onClick={() => setAsking('rotate')}>
                Rotate…
              </button>{' '}
              <button type="button" aria-label={`Revoke ${apiKey.name}`} onClick={() => setAsking('revoke')}>
                Revoke…
              </button>
            </>
          ))}
      </td>
    </tr>
  );
}

type Choice = { value: string; label: string };
type Draft = { preset?: Preset; scopes: Scope[]; groups: string[]; name: string; description: string; expires: string };
const STEPS = ['Preset', 'Scopes', 'Sharing groups', 'Review and create'] as const;
const EXPIRIES: [string, string][] = [
  ['30', '30 days'],
  ['90', '90 days'],
  ['365', '1 year'],
  ['never', 'Never'],
];

export function NewKeyPage() {
  useTitle('Create an API key');
  const { session } = useSession();
  const [step, setStep] = useState(0);
  const [draft, setDraft] = useState<Draft>({ scopes: [], groups: [], name: '', description: '', expires: '90' });
  const [created, setCreated] = useState<{ api_key: ApiKey; secret: string } | undefined>();
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const loaded = useLoad(async () => {
    const [presets, namespaces, agents, projects, groups] = await Promise.all([
      api.listPresets(),
      api.listNamespaces({ query: { limit: 1000 } }),
      api.listAgents({ query: { limit: 1000 } }),
      api.listProjects({ query: { limit: 1000 } }),
      api.listGroups({ query: { limit: 1000 } }),
    ]);
    const slug = new Map(namespaces.namespaces.map((n) => [n.id, n.slug]));
    const resources: Record<ResourceType, Choice[]> = {
      org: [{ value: session.key.org_id, label: 'this org' }],
      namespace: namespaces.namespaces.map((n) => ({ value: n.id, label: n.slug })),
      agent: agents.agents.map((a) => ({ value: a.id, label: `${slug.get(a.namespace_id) ?? '?'}/${a.name}` })),
      project: projects.projects.map((p) => ({ value: p.id, label: `${slug.get(p.namespace_id) ?? '?'}/${p.name}` })),
    };
    return { presets: presets.presets, resources, groups: groups.groups };
  }, []);
  if (!session.org_admin) return <NotAdmin />;
  if (created) return <SecretOnce created={created} />;

  return (
    <section>
      <h1>Create an API key</h1>
      <ol class="steps" aria-label="Steps">
        {STEPS.map((name, i) => (
          <li key={name} aria-current={i === step ? 'step' : undefined} class={i < step ? 'done' : ''}>
            {i + 1}. {name}
          </li>
        ))}
      </ol>
      <Pending loaded={loaded}>
        {({ presets, resources, groups }) => {
          const label = (s: Scope) =>
            `${s.resource_type}:${resources[s.resource_type].find((c) => c.value === s.resource_id)?.label ?? s.resource_id}:${s.role}`;
          return (
            <form
              class="wizard"
              onSubmit={async (e) => {
                e.preventDefault();
                if (step < 3) return setStep(step + 1);
                setBusy(true);
                setError(undefined);
                try {
                  const expires_at = draft.expires === 'never' ? null : new Date(Date.now() + Number(draft.expires) * 86_400_000).toISOString();
                  setCreated(
                    await api.createKey({
                      body: { name: draft.name.trim(), description: draft.description, scopes: draft.scopes, sharing_group_ids: draft.groups, expires_at },
                    }),
                  );
                } catch (err) {
                  setError(err);
                } finally {
                  setBusy(false);
                }
              }}
            >
              {step === 0 && (
                <fieldset>
                  <legend>Step 1 of 4 · What is this key for?</legend>
                  {presets.map((p) => (
                    <label key={p.id} class="choice">
                      <input
                        type="radio"
                        name="preset"
                        value={p.id}
                        checked={draft.preset?.id === p.id}
                        onChange={() =>
                          setDraft({
                            ...draft,
                            preset: p,
                            // The preset's scopes, each on the first resource of its type the key can see.
                            scopes: p.scopes.flatMap((s) => {
                              const first = resources[s.resource_type][0];
                              return first ? [{ resource_type: s.resource_type, resource_id: first.value, role: s.role }] : [];
                            }),
                          })
                        }
                      />{' '}
                      <strong>{p.name}</strong> — {p.use}
                      <span class="muted small block">
                        Scopes: {p.scopes.map((s) => `${s.resource_type}:${s.role}`).join(', ') || 'none'}. {p.description}
                      </span>
                    </label>
                  ))}
                </fieldset>
              )}
              {step === 1 && <ScopesStep draft={draft} setDraft={setDraft} resources={resources} />}
              {step === 2 && (
                <fieldset>
                  <legend>Step 3 of 4 · Sharing groups</legend>
                  {groups.length === 0 && (
                    <p class="muted">
                      There are no groups. Create one with <code>agentctl groups create</code>.
                    </p>
                  )}
                  {groups.map((g) => (
                    <label key={g.id} class="choice">
                      <input
                        type="checkbox"
                        checked={draft.groups.includes(g.id)}
                        onChange={(e) =>
                          setDraft({ ...draft, groups: e.currentTarget.checked ? [...draft.groups, g.id] : draft.groups.filter((id) => id !== g.id) })
                        }
                      />{' '}
                      <bdi class="text">{g.name}</bdi>
                    </label>
                  ))}
                  <p class="muted small">A key in a group shares what it creates with the group’s other keys.</p>
                </fieldset>
              )}
              {step === 3 && (
                <fieldset>
                  <legend>Step 4 of 4 · Review and create</legend>
                  <label for="key-name">Name</label>
                  <input id="key-name" required maxLength={100} value={draft.name} onInput={(e) => setDraft({ ...draft, name: e.currentTarget.value })} />
                  <label for="key-description">Description</label>
                  <input
                    id="key-description"
                    maxLength={1000}
                    value={draft.description}
                    onInput={(e) => setDraft({ ...draft, description: e.currentTarget.value })}
                  />
                  <label for="key-expires">Expires</label>
                  <select id="key-expires" value={draft.expires} onChange={(e) => setDraft({ ...draft, expires: e.currentTarget.value })}>
                    {EXPIRIES.map(([value, text]) => (
                      <option key={value} value={value}>
                        {text}
                      </option>
                    ))}
                  </select>
                  <dl class="facts">
                    <dt>Preset</dt>
                    <dd>{draft.preset?.name ?? 'Custom'}</dd>
                    <dt>Scopes</dt>
                    <dd>{draft.scopes.map(label).join(', ')}</dd>
                    <dt>Sharing groups</dt>
                    <dd>{draft.groups.map((id) => groups.find((g) => g.id === id)?.name ?? id).join(', ') || 'none'}</dd>
                  </dl>
                </fieldset>
              )}
              {error !== undefined && <ErrorBox error={error} />}
              <div class="actions">
                {step > 0 && (
                  <button type="button" onClick={() => setStep(step - 1)}>
                    ← Back
                  </button>
                )}
                <button
                  type="submit"
                  class="primary"
                  disabled={busy || (step === 0 && !draft.preset) || (step === 1 && draft.scopes.length === 0) || (step === 3 && !draft.name.trim())}
                >
                  {step < 3 ? 'Next →' : busy ? 'Creating…' : 'Create the key'}
                </button>
                <button type="button" onClick={() => navigate(`${BASE}/keys`)}>
                  Cancel
                </button>
              </div>
            </form>
          );
        }}
      </Pending>
    </section>
  );
}

function ScopesStep({ draft, setDraft, resources }: { draft: Draft; setDraft: (d: Draft) => void; resources: Record<ResourceType, Choice[]> }) {
  const [type, setType] = useState<ResourceType>('agent');
  const [resource, setResource] = useState('');
  const [role, setRole] = useState('viewer');
  const choices = resources[type];
  const roles = ROLES_BY_RESOURCE_TYPE[type];
  return (
    <fieldset>
      <legend>Step 2 of 4 · Scopes</legend>
      {draft.scopes.length === 0 && <p class="muted">No scopes yet: add at least one.</p>}
      <ul class="scopes">
        {draft.scopes.map((s, i) => (
          <li key={`${s.resource_type}:${s.resource_id}:${s.role}`}>
            <code>
              {s.resource_type}:{resources[s.resource_type].find((c) => c.value === s.resource_id)?.label ?? s.resource_id}:{s.role}
            </code>{' '}
            <button type="button" class="small" onClick={() => setDraft({ ...draft, scopes: draft.scopes.filter((_, j) => j !== i) })}>
              Remove
            </button>
          </li>
        ))}
      </ul>
      <div class="row">
        <label>
          Resource type
          <select
            value={type}
            onChange={(e) => {
              const t = e.currentTarget.value as ResourceType;
              setType(t);
              setResource('');
              setRole(ROLES_BY_RESOURCE_TYPE[t][0]!);
            }}
          >
            {(Object.keys(resources) as ResourceType[]).map((t) => (
              <option key={t} value={t}>
                {t}
              </option>
            ))}
          </select>
        </label>
        <label>
          Resource
          <select value={resource} onChange={(e) => setResource(e.currentTarget.value)}>
            <option value="">choose…</option>
            {choices.map((c) => (
              <option key={c.value} value={c.value}>
                {c.label}
              </option>
            ))}
          </select>
        </label>
        <label>
          Role
          <select value={role} onChange={(e) => setRole(e.currentTarget.value)}>
            {roles.map((r) => (
              <option key={r} value={r}>
                {r}
              </option>
            ))}
          </select>
        </label>
        <button
          type="button"
          disabled={!resource}
          onClick={() => {
            const scope = { resource_type: type, resource_id: resource, role: role as Role };
            if (!draft.scopes.some((s) => s.resource_type === type && s.resource_id === resource && s.role === role))
              setDraft({ ...draft, scopes: [...draft.scopes, scope] });
          }}
        >
          Add scope
        </button>
      </div>
    </fieldset>
  );
}

function SecretOnce({ created, rotated, onBack }: { created: { api_key: ApiKey; secret: string }; rotated?: boolean; onBack?: () => void }) {
  useTitle(rotated ? 'Key rotated' : 'Key created');
  const [copied, setCopied] = useState<string>();
  return (
    <section>
      <h1>{rotated ? 'Key rotated' : 'Key created'}</h1>
      <p role="alert">
        This is the only time the {rotated ? 'new ' : ''}secret of <bdi class="text">{created.api_key.name}</bdi> is shown. Copy it now; it cannot be shown
        again.{rotated ? ' The old secret no longer works.' : ''}
      </p>
      <div class="secret">
        <label for="secret">Secret</label>
        <input id="secret" readOnly value={created.secret} onFocus={(e) => e.currentTarget.select()} />
        <button
          type="button"
          class="primary"
          onClick={async () => {
            try {
              await navigator.clipboard.writeText(created.secret);
              setCopied('Copied.');
            } catch {
              (document.getElementById('secret') as HTMLInputElement).select();
              setCopied('Copying is not allowed here: the secret is selected, press Ctrl+C.');
            }
          }}
        >
          Copy
        </button>
        <span role="status">{copied}</span>
      </div>
      <p>
        Use it: <code>agentctl auth login --with-token</code>, or <code>AGENTCTL_API_KEY</code>.
      </p>
      <p>
        {onBack ? (
          <button type="button" onClick={onBack}>
            Back to the keys
          </button>
        ) : (
          <Link href={`${BASE}/keys`}>Back to the keys</Link>
        )}
      </p>
    </section>
  );
}
