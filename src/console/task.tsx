// A task: its live conversation over the task's stream (GET /tasks/{id}/stream through the client,
// which resumes after a dropped connection with Last-Event-ID, so nothing shows twice), sending an
// event, cancelling, and its state. Everything an agent wrote is rendered as text, never as markup.
import { useEffect, useReducer, useRef, useState } from 'preact/hooks';
import type { Content, Message, MessageContent, MessageDelta } from '../contract/conversation.js';
import type { ConversationPage } from '../contract/endpoints.js';
import { STREAMED_FIELDS } from '../contract/enums.js';
import { isTerminalTask } from '../contract/lifecycle.js';
import type { Task } from '../contract/resources.js';
import { api } from './api.js';
import { BASE } from './session.js';
import { TaskTraces } from './traces.js';
import { agentNames, ErrorBox, Link, Pending, Section, ShowEarlier, Status, useLoad, usePages, useTitle, versionNumbers, when } from './ui.js';
import { VirtualList } from './virtual.js';

type Item =
  | { kind: 'event'; key: string; seq: number; content: Content; at: string }
  | { kind: 'message'; key: string; seq: number; message: Message }
  | { kind: 'status'; key: string; seq: number; status: string; reason: string | null | undefined };

/** The conversation as the stream builds it: records applied in sequence order, deltas appended at their offset. */
class Conversation {
  items: Item[] = [];
  private messages = new Map<string, Extract<Item, { kind: 'message' }>>();
  lastStatus: string | null | undefined;
  task?: Task;
  /** Items before the first one here, not loaded yet (read a page at a time, from the end). */
  earlier = 0;
  /** The sequence_id of the first item here: the next page ends before it. */
  oldest = Number.POSITIVE_INFINITY;

  /** A page of the conversation (GET /tasks/{id}/conversation), put before what is here. */
  prepend(page: ConversationPage): void {
    const items: Item[] = [];
    for (const record of page.items) {
      if (record.kind === 'event')
        items.push({ kind: 'event', key: record.data.id, seq: record.sequence_id, content: record.data.content, at: record.data.created_at });
      else if (record.kind === 'message') {
        if (this.messages.has(record.data.id)) continue;
        const item = { kind: 'message' as const, key: record.data.id, seq: record.sequence_id, message: record.data };
        this.messages.set(record.data.id, item);
        items.push(item);
      } else
        items.push({
          kind: 'status',
          key: `status-${record.sequence_id}`,
          seq: record.sequence_id,
          status: record.data.status ?? '',
          reason: record.data.status_reason,
        });
    }
    this.items = [...items, ...this.items];
    if (page.items.length) this.oldest = page.items[0]!.sequence_id;
    this.earlier = page.has_more ? page.total - this.items.length : 0;
  }

  apply(record: import('../contract/conversation.js').StreamRecord): void {
    switch (record.kind) {
      case 'event':
        this.items.push({ kind: 'event', key: record.data.id, seq: record.sequence_id, content: record.data.content, at: record.data.created_at });
        return;
      case 'message':
      case 'message_update': {
        const known = this.messages.get(record.data.id);
        if (known) known.message = record.data;
        // A change to a message in a page not loaded yet: that page, when read, has it as it is now.
        else if (record.kind === 'message_update' && this.earlier > 0 && record.data.sequence_id < this.oldest) return;
        else {
          const item = { kind: 'message' as const, key: record.data.id, seq: record.sequence_id, message: record.data };
          this.messages.set(record.data.id, item);
          this.items.push(item);
        }
        return;
      }
      case 'message_delta':
        this.delta(record.data);
        return;
      case 'task':
        this.task = record.data;
        if (record.data.status !== this.lastStatus) {
          if (this.lastStatus !== undefined)
            this.items.push({
              kind: 'status',
              key: `status-${record.sequence_id}`,
              seq: record.sequence_id,
              status: record.data.status ?? '',
              reason: record.data.status_reason,
            });
          this.lastStatus = record.data.status;
        }
        return;
      case 'tracker':
        return;
    }
  }

  private delta(delta: MessageDelta): void {
    const item = this.messages.get(delta.message_id);
    if (!item) return;
    const content = item.message.content as Record<string, unknown> & MessageContent;
    const field = STREAMED_FIELDS[content.type as keyof typeof STREAMED_FIELDS];
    if (!field) return;
    const current = String(content[field] ?? '');
    // A delta's offset is where it starts in the field: a repeat of text already here adds nothing.
    const fresh = delta.offset >= current.length ? delta.delta : delta.delta.slice(current.length - delta.offset);
    item.message = { ...item.message, content: { ...content, [field]: current + fresh } as MessageContent };
  }
}

/** The conversation opens at its end: one page (shown at once), earlier ones as the reader scrolls up. */
const FIRST_PAGE = 100;
const EARLIER_PAGE = 500;

export function TaskPage({ taskId }: { taskId: string }) {
  const loaded = useLoad(async () => {
    const task = await api.getTask({ params: { task_id: taskId }, query: { relationships: ['agents'] } });
    const agentId = task.agents?.[0]?.id;
    const access = agentId ? await api.getAccess({ query: { agent_id: agentId } }) : { org_admin: false, agent: null };
    return { task, permissions: access.agent?.permissions ?? [] };
  }, [taskId]);
  useTitle(loaded.data ? (loaded.data.task.name ?? taskId) : 'Task');
  return <Pending loaded={loaded}>{(data) => <TaskView key={taskId} initial={data.task} canRun={data.permissions.includes('run')} />}</Pending>;
}

function TaskView({ initial, canRun }: { initial: Task; canRun: boolean }) {
  const model = useRef(new Conversation());
  const [, redraw] = useReducer((n: number) => n + 1, 0);
  const [link, setLink] = useState<'connecting' | 'live' | 'reconnecting' | 'ended'>('connecting');
  const [streamError, setStreamError] = useState<unknown>();
  // The state, files and traces sections are read once the conversation's first page shows: on a
  // long task their reads (10,000 turns' traces) had come first and held the conversation back.
  const [opened, setOpened] = useState(false);
  // The stream's task records carry no relationships: the agent stays as first loaded.
  const task = { ...initial, ...model.current.task, agents: initial.agents };

  useEffect(() => {
    const controller = new AbortController();
    let frame = 0;
    // Many deltas a second: one render per animation frame.
    const schedule = () => {
      if (!frame)
        frame = requestAnimationFrame(() => {
          frame = 0;
          redraw(0);
        });
    };
    (async () => {
      try {
        // The end of the conversation first (one page), then the stream from where that page was read.
        const page = await api.getConversationPage({ params: { task_id: initial.id }, query: { limit: FIRST_PAGE } }, { signal: controller.signal });
        model.current.prepend(page);
        model.current.lastStatus = page.status;
        redraw(0);
        setOpened(true);
        for await (const record of api.streamTask(initial.id, {
          afterSequenceId: page.last_sequence_id,
          signal: controller.signal,
          maxReconnects: Number.POSITIVE_INFINITY,
          onRetry: () => setLink('reconnecting'),
          // Open is live: a stream resumed at the end may carry no record for a while.
          onOpen: () => setLink('live'),
        })) {
          setLink('live');
          model.current.apply(record);
          schedule();
        }
        setLink('ended');
      } catch (error) {
        if (!controller.signal.aborted) {
          setStreamError(error);
          setLink('ended');
          setOpened(true);
        }
      }
    })();
    return () => {
      controller.abort();
      cancelAnimationFrame(frame);
    };
  }, [initial.id]);

  const loading = useRef(false);
  /** The page before the first item shown, when the reader nears the top. */
  const loadEarlier = async () => {
    const conversation = model.current;
    if (loading.current || conversation.earlier === 0) return;
    loading.current = true;
    try {
      conversation.prepend(
        await api.getConversationPage({ params: { task_id: initial.id }, query: { before_sequence_id: conversation.oldest, limit: EARLIER_PAGE } }),
      );
      redraw(0);
    } catch (error) {
      setStreamError(error);
    } finally {
      loading.current = false;
    }
  };

  const items = model.current.items;
  const terminal = isTerminalTask(task.status);
  return (
    <section class="task">
      <h1>
        Task {task.name ? <bdi class="text">{task.name}</bdi> : <code>{task.id}</code>} <Status value={task.status} />
      </h1>
      <p class="muted small">
        <code>{task.id}</code> · created {when(task.created_at)}
        {task.agents?.[0] && (
          <>
            {' '}
            · agent <Link href={`${BASE}/agents/${task.agents[0].id}`}>{task.agents[0].name}</Link>
          </>
        )}
        {task.current_version_id && (
          <>
            {' '}
            · <Link href={`${BASE}/versions/${task.current_version_id}`}>its version</Link>
          </>
        )}
        {task.current_version_id && (
          <>
            {' '}
            · <Link href={`${BASE}/logs?version_id=${task.current_version_id}&task_id=${task.id}`}>its logs</Link>
          </>
        )}
        {task.status_reason && <> · {task.status_reason}</>}
      </p>
      <p class={`link ${link}`} role="status">
        {{ connecting: 'Connecting…', live: 'Live', reconnecting: 'Connection lost: reconnecting…', ended: 'The task has ended' }[link]}
      </p>
      {streamError !== undefined && <ErrorBox error={streamError} />}
      <h2 id="conversation-title">
        Conversation <span class="muted small">{items.length + model.current.earlier} items</span>
      </h2>
      <VirtualList
        items={items}
        keyOf={(item) => item.key}
        render={(item) => <ItemView item={item} />}
        class="conversation-box"
        listClass="conversation"
        empty={link !== 'connecting' ? 'Nothing yet.' : undefined}
        box={{ role: 'log', 'aria-labelledby': 'conversation-title', 'aria-live': 'polite' }}
        onNearTop={loadEarlier}
      />
      {model.current.earlier > 0 && (
        <button type="button" class="small" onClick={loadEarlier}>
          Load earlier items ({model.current.earlier} more)
        </button>
      )}
      {canRun && !terminal && <SendEvent taskId={task.id} />}
      {canRun && !terminal && <InterruptTurn taskId={task.id} />}
      {canRun && !terminal && <CancelTask taskId={task.id} />}
      {!canRun && <p class="muted small">Your API key may read this task but not run it: sending events, interrupting and cancelling are not offered.</p>}
      {opened && <TaskState taskId={task.id} />}
      {opened && <TaskFiles filesystemId={task.filesystem_id} />}
      {opened && <TaskTraces taskId={task.id} />}
    </section>
  );
}

function ItemView({ item }: { item: Item }) {
  if (item.kind === 'status')
    return (
      <div class="status-change" data-kind="status">
        Status: <Status value={item.status} /> {item.reason && <span class="text muted">{item.reason}</span>}
      </div>
    );
  if (item.kind === 'event')
    return (
      <div class="bubble user" data-kind="event">
        <span class="who">you</span>
        <ContentView content={item.content} />
      </div>
    );
  const m = item.message;
  return (
    <div class={`bubble ${m.author}`} data-kind={m.content.type} data-streaming={m.streaming_status ?? undefined}>
      <span class="who">{m.author}</span>
      <ContentView content={m.content} />
      {m.streaming_status === 'IN_PROGRESS' && (
        <span class="muted small" aria-hidden="true">
          {' '}
          writing…
        </span>
      )}
      {(m.streaming_status === 'FAILED' || m.streaming_status === 'INTERRUPTED') && (
        <p class="muted small">
          <Status value={m.streaming_status} /> <span class="text">{m.streaming_error}</span>
        </p>
      )}
    </div>
  );
}

function ContentView({ content }: { content: MessageContent }) {
  switch (content.type) {
    case 'text':
      return (
        <div class="text message-text" dir="auto">
          {content.text}
        </div>
      );
    case 'reasoning':
      return (
        <details class="reasoning">
          <summary>Reasoning</summary>
          <div class="text message-text" dir="auto">
            {content.summary}
          </div>
        </details>
      );
    case 'tool_request':
      return (
        <div class="tool">
          <span class="muted small">Tool call</span> <code class="text">{content.name}</code>
          <pre class="text">{content.arguments}</pre>
        </div>
      );
    case 'tool_response':
      return (
        <div class="tool">
          <span class="muted small">{content.error ? 'Tool error' : 'Tool result'}</span>
          <pre class="text">{content.error ?? JSON.stringify(content.result, null, 2)}</pre>
        </div>
      );
    case 'data':
      return <pre class="text">{JSON.stringify(content.data, null, 2)}</pre>;
  }
}

function SendEvent({ taskId }: { taskId: string }) {
  const [text, setText] = useState('');
  const [error, setError] = useState<unknown>();
  const [busy, setBusy] = useState(false);
  const send = async () => {
    if (!text.trim()) return;
    setBusy(true);
    setError(undefined);
    try {
      await api.createEvent({ params: { task_id: taskId }, body: { content: text } });
      setText('');
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form
      class="send"
      onSubmit={(e) => {
        e.preventDefault();
        void send();
      }}
    >
      <label for="event-text">Send an event</label>
      <textarea
        id="event-text"
        rows={3}
        value={text}
        onInput={(e) => setText(e.currentTarget.value)}
        onKeyDown={(e) => {
          if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
            e.preventDefault();
            void send();
          }
        }}
        aria-describedby="event-hint"
      />
      <span id="event-hint" class="muted small block">
        Ctrl+Enter sends.
      </span>
      {error !== undefined && <ErrorBox error={error} />}
      <button type="submit" class="primary" disabled={busy || !text.trim()}>
        {busy ? 'Sending…' : 'Send'}
      </button>
    </form>
  );
}

/** Stops the turn the agent is running (its handler's signal fires); the task stays open for the next event. */
function InterruptTurn({ taskId }: { taskId: string }) {
  const [result, setResult] = useState<string>();
  const [error, setError] = useState<unknown>();
  return (
    <div class="interrupt">
      {error !== undefined && <ErrorBox error={error} />}
      <button
        type="button"
        onClick={async () => {
          setError(undefined);
          try {
            setResult((await api.interruptTask({ params: { task_id: taskId } })).detail);
          } catch (e) {
            setError(e);
          }
        }}
      >
        Interrupt the turn
      </button>{' '}
      {result && (
        <span class="muted small" role="status">
          {result}
        </span>
      )}
    </div>
  );
}

function CancelTask({ taskId }: { taskId: string }) {
  const [asking, setAsking] = useState(false);
  const [error, setError] = useState<unknown>();
  return (
    <div class="danger-zone">
      {error !== undefined && <ErrorBox error={error} />}
      {asking ? (
        <>
          <span>Cancel this task? The agent is told to stop.</span>{' '}
          <button
            type="button"
            class="danger"
            onClick={async () => {
              try {
                await api.cancelTask({ params: { task_id: taskId } });
                setAsking(false);
              } catch (e) {
                setError(e);
              }
            }}
          >
            Cancel the task
          </button>{' '}
          <button type="button" onClick={() => setAsking(false)}>
            Keep it
          </button>
        </>
      ) : (
        <button type="button" onClick={() => setAsking(true)}>
          Cancel task…
        </button>
      )}
    </div>
  );
}

function TaskState({ taskId }: { taskId: string }) {
  const loaded = useLoad(async () => {
    const [{ states }, agents] = await Promise.all([api.listStates({ query: { task_id: taskId } }), agentNames().catch(() => new Map<string, string>())]);
    const versions = await versionNumbers(states.flatMap((s) => (s.written_by_version_id ? [s.written_by_version_id] : [])));
    return { states, agents, versions };
  }, [taskId]);
  return (
    <Section id="state" title="State" onReload={loaded.reload}>
      <Pending loaded={loaded}>
        {({ states, agents, versions }) =>
          states.length === 0 ? (
            <p class="empty">No state written yet.</p>
          ) : (
            states.map((s) => (
              <div key={s.id} class="state" data-state={s.id}>
                <p class="muted small">
                  <bdi class="text">{agents.get(s.agent_id) ?? s.agent_id}</bdi> · <code>{s.id}</code> · record version {s.version} · updated{' '}
                  {when(s.updated_at)} · written by{' '}
                  {s.written_by_version_id ? (
                    <Link href={`${BASE}/versions/${s.written_by_version_id}`}>{versions.get(s.written_by_version_id) ?? s.written_by_version_id}</Link>
                  ) : (
                    'a version not recorded'
                  )}
                </p>
                <pre class="json text">{JSON.stringify(s.state, null, 2)}</pre>
                <StateHistory taskId={taskId} agentId={s.agent_id} written={s.version} />
              </div>
            ))
          )
        }
      </Pending>
    </Section>
  );
}

const HISTORY_PAGE = 20;

/**
 * The values a state held before it was replaced, since the task's last migration, newest first
 * (GET /tasks/{id}/states/history): each with when it was written and by which version, a page at a time.
 */
/** `written`: the state's record version; a newer one (the state reloaded) reads the history again. */
function StateHistory({ taskId, agentId, written }: { taskId: string; agentId: string; written: number }) {
  const pages = usePages(HISTORY_PAGE);
  const loaded = useLoad(async () => {
    const found = await api.listStateHistory({ params: { task_id: taskId }, query: { agent_id: agentId, limit: pages.limit } });
    const versions = await versionNumbers(found.history.flatMap((h) => (h.written_by_version_id ? [h.written_by_version_id] : [])));
    return { ...found, versions };
  }, [taskId, agentId, written, pages.limit]);
  return (
    <details class="state-history">
      <summary>Earlier values{loaded.data ? ` (${loaded.data.total})` : ''}</summary>
      <Pending loaded={loaded}>
        {({ history, total, since_migration, versions }) => (
          <>
            <p class="muted small">
              {since_migration ? <>Since the task’s last migration, {when(since_migration)}. </> : null}
              {total === 0 ? 'None: the state has not been replaced at a later turn yet.' : 'Newest first; one value per turn, the last written in it.'}
            </p>
            <ol class="history">
              {history.map((h) => (
                <li key={`${h.agent_id}-${h.sequence_id}`} data-sequence={h.sequence_id}>
                  <p class="muted small">
                    written {when(h.written_at)} at sequence {h.sequence_id} by{' '}
                    {h.written_by_version_id ? (
                      <Link href={`${BASE}/versions/${h.written_by_version_id}`}>{versions.get(h.written_by_version_id) ?? h.written_by_version_id}</Link>
                    ) : (
                      'a version not recorded'
                    )}
                  </p>
                  <pre class="json text">{JSON.stringify(h.state, null, 2)}</pre>
                </li>
              ))}
            </ol>
            <ShowEarlier shown={history.length} total={total} onMore={pages.more}>
              Show earlier values
            </ShowEarlier>
          </>
        )}
      </Pending>
    </details>
  );
}

/** `a/b c.txt` as a path under `/filesystems/{id}/files/`: each segment encoded, the slashes kept. */
const filePath = (filesystemId: string, path: string) =>
  `/filesystems/${encodeURIComponent(filesystemId)}/files/${path.split('/').map(encodeURIComponent).join('/')}`;

const bytes = (n: number) => (n < 1024 ? `${n} B` : n < 1024 * 1024 ? `${(n / 1024).toFixed(1)} KB` : `${(n / 1024 / 1024).toFixed(1)} MB`);

/**
 * The files of the task's filesystem (its manifest, GET /filesystems/{id}/files). A file downloads
 * through a same-origin link the session cookie authorises (GET needs no CSRF token). Archives fix
 * each member's mtime (equal trees, equal bytes), so there is no time per file: the one shown is the
 * filesystem's, when its content was last replaced.
 */
function TaskFiles({ filesystemId }: { filesystemId: string }) {
  const loaded = useLoad(async () => {
    const [filesystem, manifest] = await Promise.all([
      api.getFilesystem({ params: { filesystem_id: filesystemId } }),
      api.listFilesystemFiles({ params: { filesystem_id: filesystemId } }),
    ]);
    return { filesystem, files: manifest.files.filter((f) => f.type !== 'dir') };
  }, [filesystemId]);
  return (
    <Section id="files" title="Files" onReload={loaded.reload}>
      <Pending loaded={loaded}>
        {({ filesystem, files }) =>
          files.length === 0 ? (
            <p class="empty">
              No files yet. Upload some with <code>agentctl fs push DIR --fs {filesystemId}</code>.
            </p>
          ) : (
            <>
              <p class="muted small">
                <code>{filesystem.id}</code> · {files.length} {files.length === 1 ? 'file' : 'files'}, {bytes(filesystem.size_bytes)} · modified{' '}
                {when(filesystem.updated_at)} (its last upload: files keep no time of their own)
              </p>
              <table class="files">
                <caption class="sr-only">Files of the task’s filesystem</caption>
                <thead>
                  <tr>
                    <th scope="col">Path</th>
                    <th scope="col">Size</th>
                    <th scope="col">
                      <span class="sr-only">Download</span>
                    </th>
                  </tr>
                </thead>
                <tbody>
                  {files.map((f) => (
                    <tr key={f.path} data-path={f.path}>
                      <td>
                        <code class="text">{f.path}</code>
                        {f.type === 'symlink' && <span class="muted small"> → {f.linkpath}</span>}
                      </td>
                      <td>{bytes(f.size)}</td>
                      <td>
                        {f.type === 'file' && (
                          <a href={filePath(filesystem.id, f.path)} download={f.path.split('/').pop()} aria-label={`Download ${f.path}`}>
                            Download
                          </a>
                        )}
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </>
          )
        }
      </Pending>
    </Section>
  );
}
