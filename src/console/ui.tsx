// Small pieces every view uses: links that route in the page, the async-load hook, errors in words,
// status badges and the pager.
import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { api, describeError } from './api.js';

type Listener = () => void;
const listeners = new Set<Listener>();

/** Goes to a console path without reloading the page. */
export function navigate(to: string, replace = false): void {
  if (replace) history.replaceState(null, '', to);
  else history.pushState(null, '', to);
  for (const l of listeners) l();
  window.scrollTo(0, 0);
}

/** The current location (path and query), re-rendering on navigation. */
export function useLocation(): URL {
  const [, setTick] = useState(0);
  useEffect(() => {
    const update = () => setTick((t) => t + 1);
    listeners.add(update);
    window.addEventListener('popstate', update);
    return () => {
      listeners.delete(update);
      window.removeEventListener('popstate', update);
    };
  }, []);
  return new URL(location.href);
}

export function Link(props: { href: string; children: ComponentChildren; class?: string; 'aria-current'?: 'page' | undefined }) {
  return (
    <a
      href={props.href}
      class={props.class}
      aria-current={props['aria-current']}
      onClick={(e) => {
        if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
        e.preventDefault();
        navigate(props.href);
      }}
    >
      {props.children}
    </a>
  );
}

export type Loaded<T> = { data?: T; error?: unknown; loading: boolean; reload: () => void };

/** Runs `load` when `deps` change; the answer, the error, and a reload. */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[]): Loaded<T> {
  const [state, setState] = useState<{ data?: T; error?: unknown; loading: boolean }>({ loading: true });
  const [tick, setTick] = useState(0);
  const current = useRef(0);
  useEffect(() => {
    const run = ++current.current;
    setState((s) => ({ data: s.data, loading: true }));
    load().then(
      (data) => run === current.current && setState({ data, loading: false }),
      (error) => run === current.current && setState({ error, loading: false }),
    );
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { ...state, reload };
}

/** An API error, in words, with what to do. */
export function ErrorBox({ error, onRetry }: { error: unknown; onRetry?: () => void }) {
  const { title, detail, hint } = describeError(error);
  return (
    <div class="error" role="alert">
      <strong>{title}</strong>
      <p class="text">{detail}</p>
      {hint && <p>{hint}</p>}
      {onRetry && (
        <button type="button" onClick={onRetry}>
          Try again
        </button>
      )}
    </div>
  );
}

/** What a load shows while it has nothing yet, or failed. */
export function Pending<T>({ loaded, children }: { loaded: Loaded<T>; children: (data: T) => ComponentChildren }) {
  if (loaded.error) return <ErrorBox error={loaded.error} onRetry={loaded.reload} />;
  if (loaded.data === undefined)
    return (
      <p class="muted" aria-busy="true">
        Loading…
      </p>
    );
  return <>{children(loaded.data)}</>;
}

const TONES: Record<string, string> = {
  RUNNING: 'info',
  IDLE: 'muted',
  COMPLETED: 'ok',
  ACTIVE: 'ok',
  DONE: 'ok',
  FAILED: 'bad',
  UNHEALTHY: 'bad',
  TIMED_OUT: 'bad',
  TERMINATED: 'bad',
  CANCELED: 'warn',
  DEPLOYING: 'info',
  DRAINING: 'warn',
  IN_PROGRESS: 'info',
  INTERRUPTED: 'warn',
};

export const Status = ({ value }: { value: string | null | undefined }) => <span class={`badge ${TONES[value ?? ''] ?? 'muted'}`}>{value ?? 'unknown'}</span>;

/**
 * A titled section of a page: its heading (`{id}-title`), with a Reload button when given one, and
 * its content. The task page's state, files and traces and an agent's secrets are each one.
 */
export function Section(props: { id: string; title: ComponentChildren; onReload?: () => void; children: ComponentChildren }) {
  return (
    <section aria-labelledby={`${props.id}-title`}>
      <h2 id={`${props.id}-title`}>
        {props.title}
        {props.onReload && (
          <>
            {' '}
            <button type="button" class="small" onClick={props.onReload}>
              Reload
            </button>
          </>
        )}
      </h2>
      {props.children}
    </section>
  );
}

/**
 * A list read newest first, a page at a time (traces, state history): `limit` is what to read now,
 * `more` raises it by a page. `ShowEarlier` is its button, shown while fewer than the total are read.
 */
export function usePages(size: number): { limit: number; more: () => void } {
  const [pages, setPages] = useState(1);
  return { limit: size * pages, more: () => setPages((n) => n + 1) };
}

export function ShowEarlier(props: { shown: number; total: number; onMore: () => void; children: ComponentChildren }) {
  if (props.shown >= props.total) return null;
  return (
    <button type="button" class="small" onClick={props.onMore}>
      {props.children}
    </button>
  );
}

/** Page n of a list whose total is known (or not: then "next" shows while a page comes back full). */
export function Pager(props: { page: number; limit: number; total?: number; shown: number; onPage: (page: number) => void; label: string }) {
  const pages = props.total === undefined ? undefined : Math.max(1, Math.ceil(props.total / props.limit));
  const hasNext = pages === undefined ? props.shown === props.limit : props.page < pages;
  return (
    <nav class="pager" aria-label={`${props.label} pages`}>
      <button type="button" disabled={props.page <= 1} onClick={() => props.onPage(props.page - 1)}>
        ← Previous
      </button>
      <span aria-live="polite">
        Page {props.page}
        {pages !== undefined && ` of ${pages}`}
        {props.total !== undefined && ` · ${props.total} in all`}
      </span>
      <button type="button" disabled={!hasNext} onClick={() => props.onPage(props.page + 1)}>
        Next →
      </button>
    </nav>
  );
}

export const when = (iso: string | null | undefined) => (iso ? new Date(iso).toLocaleString() : '—');

/** Sets the document title for a view. */
export function useTitle(title: string): void {
  useEffect(() => {
    document.title = `${title} · agentctl console`;
  }, [title]);
}

const access = new Map<string, Promise<readonly string[]>>();
/** What the session's key may do on an agent (`GET /access`), asked once per agent per session. */
export function agentPermissions(agentId: string): Promise<readonly string[]> {
  let known = access.get(agentId);
  if (!known) {
    known = api.getAccess({ query: { agent_id: agentId } }).then(
      (a) => a.agent?.permissions ?? [],
      () => [],
    );
    access.set(agentId, known);
  }
  return known;
}
/** Forgets what keys may do: a new session may be another key's. */
export const forgetAccess = () => access.clear();

/** Polls `load` every `everyMs` while `active(data)` holds (and the page is shown); the last answer. */
export function usePoll<T>(load: () => Promise<T>, deps: unknown[], everyMs: number, active: (data: T) => boolean): Loaded<T> {
  const loaded = useLoad(load, deps);
  useEffect(() => {
    if (loaded.loading || loaded.data === undefined || !active(loaded.data)) return;
    const timer = setTimeout(loaded.reload, everyMs);
    return () => clearTimeout(timer);
  }, [loaded.data, loaded.loading]);
  return loaded;
}

/** A button that asks once more before it acts; shows the action's error in words. */
/** An async action run from a button: busy while it runs, its error kept to show in words. */
function useAction(act: () => Promise<unknown>, done?: () => void) {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>();
  const run = async () => {
    setBusy(true);
    setError(undefined);
    try {
      await act();
      done?.();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return { busy, error, run };
}

export function Confirm(props: { label: string; confirm: string; question: string; danger?: boolean; act: () => Promise<unknown>; done?: () => void }) {
  const [asking, setAsking] = useState(false);
  const { busy, error, run } = useAction(props.act, () => {
    setAsking(false);
    props.done?.();
  });
  return (
    <span class="confirm">
      {asking ? (
        <>
          <span>{props.question}</span>{' '}
          <button type="button" class={props.danger ? 'danger' : 'primary'} disabled={busy} onClick={run}>
            {props.confirm}
          </button>{' '}
          <button type="button" onClick={() => setAsking(false)}>
            Keep
          </button>
        </>
      ) : (
        <button type="button" onClick={() => setAsking(true)}>
          {props.label}
        </button>
      )}
      {error !== undefined && <ErrorBox error={error} />}
    </span>
  );
}

/** A button that runs an async action, busy meanwhile, its error shown in words. */
export function Act(props: { label: string; act: () => Promise<unknown>; done?: () => void; class?: string; 'aria-label'?: string }) {
  const { busy, error, run } = useAction(props.act, props.done);
  return (
    <>
      <button type="button" class={props.class} aria-label={props['aria-label']} disabled={busy} onClick={run}>
        {props.label}
      </button>
      {error !== undefined && <ErrorBox error={error} />}
    </>
  );
}

/** `namespace/name` of every agent the key may see, by id. */
export async function agentNames(): Promise<Map<string, string>> {
  const [agents, namespaces] = await Promise.all([api.listAgents({ query: { limit: 1000 } }), api.listNamespaces({ query: { limit: 1000 } })]);
  const slugs = new Map(namespaces.namespaces.map((n) => [n.id, n.slug]));
  return new Map(agents.agents.map((a) => [a.id, `${slugs.get(a.namespace_id) ?? '?'}/${a.name}`]));
}

/** `v3` for each version id given (one request per distinct id; an unknown one stays its id). */
export async function versionNumbers(ids: Iterable<string>): Promise<Map<string, string>> {
  const distinct = [...new Set(ids)];
  const found = await Promise.all(
    distinct.map((id) =>
      api.getVersion({ params: { version_id: id } }).then(
        (v) => `v${v.number}`,
        () => id,
      ),
    ),
  );
  return new Map(distinct.map((id, i) => [id, found[i]!]));
}
