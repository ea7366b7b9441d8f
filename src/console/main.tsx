// The web console: one page served under /console/ by the server (README "Web console"). The
// session is the server's (an HttpOnly cookie); this page keeps nothing in the browser's storage.
import { render, type ComponentChildren } from 'preact';
import { useEffect, useState } from 'preact/hooks';
import { ApiRequestError } from '../client/index.js';
import type { ConsoleSession } from '../contract/console.js';
import { api, setCsrfToken, whenSessionEnds } from './api.js';
import { AgentPage, AgentsPage, VersionPage } from './agents.js';
import { KeysPage, NewKeyPage } from './keys.js';
import { Overview } from './overview.js';
import { TaskPage } from './task.js';
import { TasksPage } from './tasks.js';
import { BASE, Session, useSession } from './session.js';
import { LogsPage } from './logs.js';
import { MigrationsPage, RehearsalPage, RolloutPage, RolloutsPage } from './rollouts.js';
import { SchedulesPage } from './schedules.js';
import { ErrorBox, forgetAccess, Link, navigate, useLocation, useTitle } from './ui.js';
import './styles.css';

function App() {
  const location = useLocation();
  const [session, setSession] = useState<ConsoleSession | null | undefined>(undefined);
  const [notice, setNotice] = useState<string | undefined>();
  const signingIn = location.pathname === `${BASE}/sign-in`;

  const adopt = (s: ConsoleSession | null) => {
    setCsrfToken(s?.csrf_token ?? '');
    forgetAccess();
    setSession(s);
  };
  useEffect(() => {
    if (signingIn && location.searchParams.has('token')) return;
    api.getSession().then(adopt, (error) => {
      adopt(null);
      if (!(error instanceof ApiRequestError && (error.status === 401 || error.status === 404))) setNotice(describe(error));
    });
  }, []);

  // Any answer of 401 means the session is over (signed out elsewhere, key revoked or expired).
  useEffect(() => whenSessionEnds((reason) => ended(reason)), []);
  const ended = (reason?: string) => {
    adopt(null);
    setNotice(reason ?? 'Your session has ended.');
  };

  if (signingIn || session === null)
    return (
      <SignIn
        notice={notice}
        onSignedIn={(s) => {
          setNotice(undefined);
          adopt(s);
          // From the sign-in page: where its link said (`next`); from any other page: that page.
          const next = signingIn ? location.searchParams.get('next') : location.pathname + location.search;
          navigate(next?.startsWith(`${BASE}/`) ? next : `${BASE}/`, true);
        }}
      />
    );
  if (session === undefined)
    return (
      <p class="muted center" aria-busy="true">
        Loading…
      </p>
    );
  return (
    <Session.Provider value={{ session, ended }}>
      <Shell onSignedOut={() => ended('You have signed out.')}>
        <Route path={location.pathname} />
      </Shell>
    </Session.Provider>
  );
}

const describe = (error: unknown) => (error instanceof Error ? error.message : String(error));

function Route({ path }: { path: string }) {
  const rest = path.startsWith(BASE) ? path.slice(BASE.length).replace(/\/+$/, '') : path;
  const parts = rest.split('/').filter(Boolean).map(decodeURIComponent);
  const [first, id] = parts;
  if (!first) return <Overview />;
  if (first === 'agents' && id) return <AgentPage agentId={id} />;
  if (first === 'agents') return <AgentsPage />;
  if (first === 'versions' && id) return <VersionPage versionId={id} />;
  if (first === 'tasks' && id) return <TaskPage taskId={id} />;
  if (first === 'tasks') return <TasksPage />;
  if (first === 'rollouts' && id) return <RolloutPage rolloutId={id} />;
  if (first === 'rollouts') return <RolloutsPage />;
  if (first === 'migrations') return <MigrationsPage />;
  if (first === 'rehearsals' && id) return <RehearsalPage rehearsalId={id} />;
  if (first === 'logs') return <LogsPage />;
  if (first === 'schedules') return <SchedulesPage />;
  if (first === 'keys' && id === 'new') return <NewKeyPage />;
  if (first === 'keys') return <KeysPage />;
  return <NotFound />;
}

function NotFound() {
  useTitle('Not found');
  return (
    <section>
      <h1>Not found</h1>
      <p>
        There is no console page at this address. <Link href={`${BASE}/`}>Go to the overview</Link>.
      </p>
    </section>
  );
}

function Shell({ children, onSignedOut }: { children: ComponentChildren; onSignedOut: () => void }) {
  const { session } = useSession();
  const path = useLocation().pathname;
  const [error, setError] = useState<unknown>();
  const nav: [string, string][] = [
    [`${BASE}/`, 'Overview'],
    [`${BASE}/agents`, 'Agents'],
    [`${BASE}/tasks`, 'Tasks'],
    [`${BASE}/rollouts`, 'Rollouts'],
    [`${BASE}/migrations`, 'Migrations'],
    [`${BASE}/schedules`, 'Schedules'],
    ...(session.org_admin ? ([[`${BASE}/keys`, 'API keys']] as [string, string][]) : []),
  ];
  const current = (href: string) => (href === `${BASE}/` ? path === href || path === BASE : path.startsWith(href));
  return (
    <>
      <a class="skip" href="#main">
        Skip to content
      </a>
      <header class="top">
        <span class="brand">agentctl</span>
        <nav aria-label="Main">
          {nav.map(([href, label]) => (
            <Link key={href} href={href} aria-current={current(href) ? 'page' : undefined}>
              {label}
            </Link>
          ))}
        </nav>
        <span class="who">
          <span class="muted">Signed in as</span> <bdi class="text">{session.key.name}</bdi> <code>{session.key.key_prefix}…</code>
        </span>
        <button
          type="button"
          onClick={async () => {
            try {
              await api.deleteSession();
              onSignedOut();
            } catch (e) {
              setError(e);
            }
          }}
        >
          Sign out
        </button>
      </header>
      {error !== undefined && <ErrorBox error={error} />}
      <main id="main" tabIndex={-1}>
        {children}
      </main>
    </>
  );
}

function SignIn({ notice, onSignedIn }: { notice?: string; onSignedIn: (s: ConsoleSession) => void }) {
  useTitle('Sign in');
  const location = useLocation();
  const token = location.searchParams.get('token');
  const [key, setKey] = useState('');
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  useEffect(() => {
    if (!token) return;
    // The token is spent by this request: take it out of the address bar and history first.
    const next = location.searchParams.get('next');
    history.replaceState(null, '', `${BASE}/sign-in${next ? `?next=${encodeURIComponent(next)}` : ''}`);
    setBusy(true);
    api.createSession({ body: { token } }).then(onSignedIn, (e) => {
      setBusy(false);
      setError(e);
    });
  }, [token]);
  return (
    <main id="main" class="signin">
      <h1>agentctl console</h1>
      {notice && (
        <p class="notice" role="status">
          {notice}
        </p>
      )}
      {error !== undefined && <ErrorBox error={error} />}
      <form
        onSubmit={async (e) => {
          e.preventDefault();
          setBusy(true);
          setError(undefined);
          try {
            const session = await api.createSession({ body: { api_key: key.trim() } });
            setKey('');
            onSignedIn(session);
          } catch (err) {
            setError(err);
            setBusy(false);
          }
        }}
      >
        <label for="api-key">API key</label>
        <input
          id="api-key"
          name="api-key"
          type="password"
          autoComplete="off"
          spellcheck={false}
          value={key}
          onInput={(e) => setKey(e.currentTarget.value)}
          required
        />
        <p class="muted small">
          The key is sent once; the server keeps a session for it and this browser stores nothing but a cookie scripts cannot read. Or run{' '}
          <code>agentctl open</code> to sign in with your profile’s key.
        </p>
        <button type="submit" class="primary" disabled={busy || !key.trim()}>
          {busy ? 'Signing in…' : 'Sign in'}
        </button>
      </form>
    </main>
  );
}

render(<App />, document.getElementById('app')!);
