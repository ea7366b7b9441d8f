import { describe, expect, test } from 'vitest';
import { Event, MessageList } from '../../src/contract/conversation.js';
import { InterruptedError } from '../../src/cli/errors.js';
import { engines } from '../support/service.js';
import { createTask, deployActive } from '../support/fixtures.js';
import { runCli, useCliService } from './support.js';

describe.each(engines)('agentctl tasks send / watch / messages / events (%s)', (engine) => {
  const { svc, env } = useCliService(engine);

  async function newTask(name?: string): Promise<string> {
    await deployActive(svc, { agent: 'default/bot' });
    return (await createTask(svc, { agent_name: 'default/bot', name })).id;
  }
  /** What the agent (or another client) does meanwhile: setup, through the typed client. */
  const client = () => svc.client();
  const events = async (taskId: string) => (await svc.api('GET', `/events?task_id=${taskId}`)).body.events;
  const trackerId = async (taskId: string) => (await client().listTrackers({ query: { task_id: taskId } })).trackers[0].id;

  test('tasks send TEXT sends a text event; --json prints the Event', async () => {
    const taskId = await newTask();
    const sent = await runCli(['tasks', 'send', taskId, 'hello there', '--json'], { env });
    expect(sent.code, sent.stderr).toBe(0);
    const event = Event.strict().parse(sent.json());
    expect(event).toMatchObject({ task_id: taskId, sequence_id: 2, content: { type: 'text', text: 'hello there' } });
    expect(await events(taskId)).toEqual([event]);
  });

  test('tasks send takes a task name and --data for a DataPart', async () => {
    const taskId = await newTask('nightly');
    const sent = await runCli(['tasks', 'send', 'nightly', '--data', '{"action":"approve"}'], { env });
    expect(sent.code, sent.stderr).toBe(0);
    expect(sent.stderr).toMatch(new RegExp(`^✓ Sent evt_\\w+ to ${taskId} \\(sequence 2\\)\\n$`));
    const [event] = await events(taskId);
    expect(event.content).toEqual({ type: 'data', data: { action: 'approve' } });
  });

  test('tasks send with neither TEXT nor --data (or both) is a usage error, exit 2', async () => {
    const taskId = await newTask();
    expect((await runCli(['tasks', 'send', taskId], { env })).code).toBe(2);
    expect((await runCli(['tasks', 'send', taskId, 'x', '--data', '{}'], { env })).code).toBe(2);
    expect(await events(taskId)).toEqual([]);
  });

  test('tasks send to a finished task exits 5 (conflict)', async () => {
    const taskId = await newTask();
    await client().cancelTask({ params: { task_id: taskId } });
    const sent = await runCli(['tasks', 'send', taskId, 'late'], { env });
    expect(sent.code).toBe(5);
    expect(sent.stderr).toContain(`Task ${taskId} is CANCELED`);
  });

  test('tasks watch: messages on stdout, events, progress, status and handler errors on stderr; exit 0 on COMPLETED', async () => {
    const taskId = await newTask();
    const watching = runCli(['tasks', 'watch', taskId], { env });
    const event = await client().createEvent({ params: { task_id: taskId }, body: { content: 'hi' } });
    const streaming = await client().createMessage({ body: { task_id: taskId, content: 'Hel', streaming_status: 'IN_PROGRESS' } });
    await client().updateTracker({ params: { tracker_id: await trackerId(taskId) }, body: { status: 'working', progress: 40, status_message: 'thinking' } });
    await client().updateMessage({ params: { message_id: streaming.id }, body: { content: 'Hello!', streaming_status: 'DONE' } });
    await client().reportHandlerError({ params: { task_id: taskId }, body: { handler: 'onEvent', message: 'TypeError: boom', event_id: event.id } });
    await client().createMessage({ body: { task_id: taskId, content: 'done now' } });
    await client().updateTask({ params: { task_id: taskId }, body: { status: 'COMPLETED' } });
    const watched = await watching;
    expect(watched.code, watched.stderr).toBe(0);
    expect(watched.stdout).toBe('Hello!\ndone now\n');
    expect(watched.stderr.split('\n')).toEqual([
      'task RUNNING',
      `→ event ${event.id}: hi`,
      '… working 40% — thinking',
      `handler error onEvent (event ${event.id}): TypeError: boom`,
      'task COMPLETED',
      '',
    ]);
  });

  test('tasks watch prints a streamed message from its deltas (piped: whole lines), reasoning and tool calls beside it; --json has every delta', async () => {
    const taskId = await newTask();
    const watching = runCli(['tasks', 'watch', taskId], { env });
    const thinking = await client().createMessage({
      body: { task_id: taskId, content: { type: 'reasoning', summary: 'Hm' }, streaming_status: 'IN_PROGRESS' },
    });
    await client().appendMessageDelta({ params: { message_id: thinking.id }, body: { delta: 'm.', offset: 2 } });
    await client().updateMessage({ params: { message_id: thinking.id }, body: { streaming_status: 'DONE' } });
    const answer = await client().createMessage({ body: { task_id: taskId, content: 'Hel', streaming_status: 'IN_PROGRESS' } });
    await client().appendMessageDelta({ params: { message_id: answer.id }, body: { delta: 'lo\nwor', offset: 3 } });
    await client().appendMessageDelta({ params: { message_id: answer.id }, body: { delta: 'ld', offset: 9 } });
    await client().updateMessage({ params: { message_id: answer.id }, body: { streaming_status: 'FAILED', streaming_error: 'model overloaded' } });
    await client().updateTask({ params: { task_id: taskId }, body: { status: 'COMPLETED' } });
    const watched = await watching;
    expect(watched.code, watched.stderr).toBe(0);
    expect(watched.stdout).toBe('(thinking) Hmm.\nHello\nworld\n');
    expect(watched.stderr).toContain('message failed: model overloaded\n');

    const json = await runCli(['tasks', 'watch', taskId, '--json'], { env });
    const kinds = json.stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line))
      .filter((r) => r.kind.startsWith('message'))
      .map((r) => [r.kind, r.data.delta ?? r.data.streaming_status]);
    expect(kinds).toEqual([
      ['message', 'IN_PROGRESS'],
      ['message_delta', 'm.'],
      ['message_update', 'DONE'],
      ['message', 'IN_PROGRESS'],
      ['message_delta', 'lo\nwor'],
      ['message_delta', 'ld'],
      ['message_update', 'FAILED'],
    ]);
  });

  test('tasks watch exits 1 when the task is canceled', async () => {
    const taskId = await newTask();
    const watching = runCli(['tasks', 'watch', taskId], { env });
    await client().cancelTask({ params: { task_id: taskId } });
    const watched = await watching;
    expect(watched.code).toBe(1);
    expect(watched.stderr).toContain('task CANCELED (Canceled by request)');
  });

  test('tasks watch --json prints the stream records as JSON Lines', async () => {
    const taskId = await newTask();
    await client().createEvent({ params: { task_id: taskId }, body: { content: 'a' } });
    await client().createMessage({ body: { task_id: taskId, content: 'b' } });
    await client().updateTask({ params: { task_id: taskId }, body: { status: 'FAILED', status_reason: 'gave up' } });
    const watched = await runCli(['tasks', 'watch', taskId, '--json'], { env });
    expect(watched.code).toBe(1);
    expect(watched.stderr).toBe('');
    const lines = watched.stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(lines.map((r) => [r.kind, r.sequence_id])).toEqual([
      ['task', 1],
      ['event', 2],
      ['message', 3],
      ['task', 4],
    ]);
    expect(lines[3].data).toMatchObject({ id: taskId, status: 'FAILED', status_reason: 'gave up' });
  });

  test('tasks watch --after resumes after a sequence number', async () => {
    const taskId = await newTask();
    await client().createMessage({ body: { task_id: taskId, content: 'old' } });
    await client().createMessage({ body: { task_id: taskId, content: 'new' } });
    await client().updateTask({ params: { task_id: taskId }, body: { status: 'COMPLETED' } });
    const watched = await runCli(['tasks', 'watch', taskId, '--after', '2'], { env });
    expect(watched.stdout).toBe('new\n');
  });

  test('Ctrl-C ends tasks watch with 130', async () => {
    const taskId = await newTask();
    const controller = new AbortController();
    const watching = runCli(['tasks', 'watch', taskId], { env, signal: controller.signal });
    // Interrupt once the server holds the stream open.
    while (svc.service.streamHub.watching(taskId) === 0) await new Promise((resolve) => setTimeout(resolve, 20));
    controller.abort(new InterruptedError('SIGINT'));
    const watched = await watching;
    expect(watched.code).toBe(130);
    expect(watched.stderr).toContain('Interrupted');
  });

  test('tasks watch of an unknown task exits 3', async () => {
    const watched = await runCli(['tasks', 'watch', 'task_missing'], { env });
    expect(watched.code).toBe(3);
    expect(watched.stderr).toContain('Task task_missing was not found');
  });

  test('tasks create --watch follows the new task until it ends', async () => {
    await deployActive(svc, { agent: 'default/bot' });
    const watching = runCli(['tasks', 'create', '--agent', 'default/bot', '--name', 'followed', '--watch'], { env });
    let taskId: string | undefined;
    while (!taskId) {
      const found = await svc.api('GET', '/tasks/name/followed');
      if (found.status === 200) taskId = found.body.id;
      else await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await client().createMessage({ body: { task_id: taskId, content: 'started' } });
    await client().updateTask({ params: { task_id: taskId }, body: { status: 'COMPLETED' } });
    const watched = await watching;
    expect(watched.code, watched.stderr).toBe(0);
    expect(watched.stdout).toBe('started\n');
    expect(watched.stderr).toContain(`✓ Created task ${taskId}`);
  });

  test('tasks messages lists the transcript with handler errors flagged; --json is the MessageList', async () => {
    const taskId = await newTask();
    await client().createMessage({ body: { task_id: taskId, content: 'hi', author: 'user' } });
    await client().reportHandlerError({ params: { task_id: taskId }, body: { handler: 'onCreate', message: 'no config' } });
    const listed = await runCli(['tasks', 'messages', taskId], { env });
    expect(listed.code).toBe(0);
    const rows = listed.stdout
      .trimEnd()
      .split('\n')
      .map((line) => line.split('\t'));
    expect(rows.map((r) => [r[0], r[2], r[4]])).toEqual([
      ['2', 'user', 'hi'],
      ['3', 'agent (handler error)', 'handler error (onCreate): no config'],
    ]);
    const json = await runCli(['tasks', 'messages', taskId, '--json', '--after', '2'], { env });
    const list = MessageList.parse(json.json());
    expect(list.messages.map((m) => m.sequence_id)).toEqual([3]);
  });

  test('tasks events lists the events in order', async () => {
    const taskId = await newTask('evts');
    await client().createEvent({ params: { task_id: taskId }, body: { content: 'one' } });
    await client().createEvent({ params: { task_id: taskId }, body: { content: { type: 'data', data: { n: 2 } } } });
    const listed = await runCli(['tasks', 'events', 'evts'], { env });
    expect(listed.code).toBe(0);
    expect(
      listed.stdout
        .trimEnd()
        .split('\n')
        .map((line) => line.split('\t'))
        .map((r) => [r[0], r[2]]),
    ).toEqual([
      ['2', 'one'],
      ['3', '{"n":2}'],
    ]);
  });
});
