// An agent's secrets (write on the agent): names, scopes and times, never values; set one (its
// value goes to the server once and is never shown again) and remove one.
import { useState } from 'preact/hooks';
import { SECRET_NAME_PATTERN } from '../contract/enums.js';
import { api } from './api.js';
import { Confirm, ErrorBox, Pending, Section, useLoad, when } from './ui.js';

export function AgentSecrets({ slug, name }: { slug: string; name: string }) {
  const path = { namespace_slug: slug, agent_name: name };
  const loaded = useLoad(() => api.listSecrets({ params: path }), [slug, name]);
  return (
    <Section id="secrets" title="Secrets">
      <p class="muted small">Given to the agent’s processes as environment variables. Values are never shown: set one again to change it.</p>
      <Pending loaded={loaded}>
        {(data) =>
          data.secrets.length === 0 ? (
            <p class="empty">No secrets.</p>
          ) : (
            <table>
              <caption class="sr-only">Secrets</caption>
              <thead>
                <tr>
                  <th scope="col">Name</th>
                  <th scope="col">Scope</th>
                  <th scope="col">Revision</th>
                  <th scope="col">Updated</th>
                  <th scope="col">
                    <span class="sr-only">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {data.secrets.map((s) => (
                  <tr key={s.id} data-secret={s.name}>
                    <td>
                      <code>{s.name}</code>
                    </td>
                    <td>{s.scope === 'environment' ? <span class="text">environment {s.environment}</span> : 'every version'}</td>
                    <td>{s.revision}</td>
                    <td>{when(s.updated_at)}</td>
                    <td>
                      <Confirm
                        label={`Remove ${s.name}…`}
                        question={`Remove ${s.name}? Its versions restart without it.`}
                        confirm={`Remove ${s.name} now`}
                        danger
                        act={() => api.deleteSecret({ params: { ...path, secret_name: s.name }, query: s.environment ? { environment: s.environment } : {} })}
                        done={loaded.reload}
                      />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )
        }
      </Pending>
      <SetSecret path={path} onSet={loaded.reload} />
    </Section>
  );
}

const NAME = SECRET_NAME_PATTERN;

function SetSecret({ path, onSet }: { path: { namespace_slug: string; agent_name: string }; onSet: () => void }) {
  const [name, setName] = useState('');
  const [value, setValue] = useState('');
  const [environment, setEnvironment] = useState('');
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const nameOk = NAME.test(name);
  return (
    <form
      class="row"
      aria-label="Set a secret"
      onSubmit={async (e) => {
        e.preventDefault();
        setBusy(true);
        setError(undefined);
        try {
          await api.setSecret({ params: { ...path, secret_name: name }, body: { value, ...(environment.trim() ? { environment: environment.trim() } : {}) } });
          setName('');
          setValue('');
          onSet();
        } catch (err) {
          setError(err);
        } finally {
          setBusy(false);
        }
      }}
    >
      <label>
        Secret name
        <input value={name} spellcheck={false} placeholder="STRIPE_KEY" onInput={(e) => setName(e.currentTarget.value)} aria-invalid={name !== '' && !nameOk} />
      </label>
      <label>
        Value
        <input type="password" autoComplete="off" value={value} onInput={(e) => setValue(e.currentTarget.value)} />
      </label>
      <label>
        Environment (optional)
        <input value={environment} placeholder="every version" onInput={(e) => setEnvironment(e.currentTarget.value)} />
      </label>
      <button type="submit" class="primary" disabled={busy || !nameOk || !value}>
        {busy ? 'Setting…' : 'Set the secret'}
      </button>
      {name !== '' && !nameOk && <p class="small bad">An environment variable name: letters, digits and _, not starting with a digit.</p>}
      {error !== undefined && <ErrorBox error={error} />}
    </form>
  );
}
