import { describe, expect, test } from 'vitest';
import { engines } from '../support/service.js';
import { createTask, deployActive } from '../support/fixtures.js';
import { runCli, useCliService } from './support.js';

// `tasks interrupt` and the tool spinner of `tasks watch` (README "Interrupt and double-texting");
// the agent's side is played through the typed client.
describe.each(engines)('agentctl tasks interrupt / watch on a terminal (%s)', (engine) => {
  const { svc, env } = useCliService(engine);
  const client = () => svc.client();

  async function newTask(): Promise<string> {
    await deployActive(svc, { agent: 'default/bot' });
    return (await createTask(svc, { agent_name: 'default/bot' })).id;
  }

  test('tasks interrupt of a task with no running turn: nothing to do, said so, exit 0', async () => {
    const taskId = await newTask();
    const result = await runCli(['tasks', 'interrupt', taskId], { env });
    expect(result.code, result.stderr).toBe(0);
    expect(result.stderr).toBe(`Nothing to interrupt: no turn of task ${taskId} is running\n`);
    const json = await runCli(['tasks', 'interrupt', taskId, '--json'], { env });
    expect(json.json()).toEqual({
      task_id: taskId,
      interrupted: false,
      turn_delivery_id: null,
      detail: `Nothing to interrupt: no turn of task ${taskId} is running`,
    });
  });

  test('tasks interrupt of an unknown task: not found, exit 3', async () => {
    const result = await runCli(['tasks', 'interrupt', 'task_nope'], { env });
    expect(result.code).toBe(3);
    expect(result.stderr).toContain('Task task_nope was not found');
  });

  test('tasks watch on a terminal shows a spinner while a tool runs, and clears it for the output', async () => {
    const taskId = await newTask();
    const watching = runCli(['tasks', 'watch', taskId], { env, tty: true });
    const call = await client().createMessage({
      body: { task_id: taskId, content: { type: 'tool_request', name: 'lookup', call_id: 'call_1', arguments: '' }, streaming_status: 'IN_PROGRESS' },
    });
    await client().appendMessageDelta({ params: { message_id: call.id }, body: { delta: '{"q":"sky"}', offset: 0 } });
    await client().updateMessage({ params: { message_id: call.id }, body: { streaming_status: 'DONE' } });
    await client().createMessage({ body: { task_id: taskId, content: { type: 'tool_response', call_id: 'call_1', result: { sky: 'clear' } } } });
    await client().createMessage({ body: { task_id: taskId, content: 'It is clear.' } });
    await client().updateTask({ params: { task_id: taskId }, body: { status: 'COMPLETED' } });
    const watched = await watching;
    expect(watched.code, watched.stderr).toBe(0);
    expect(watched.stdout).toContain('→ lookup({"q":"sky"}) [call_1]\n← call_1 {"sky":"clear"}\nIt is clear.\n');
    expect(watched.stderr).toContain('Running lookup [call_1]');
  });
});
