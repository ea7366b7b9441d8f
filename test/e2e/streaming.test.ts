import { cpSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { until, useE2e } from '../support/e2e.js';
import { engines } from '../support/service.js';

const EXAMPLE = path.resolve('examples/streaming');

interface Msg {
  id: string;
  sequence_id: number;
  content: { type: string; text?: string };
  streaming_status: string | null;
  streaming_error: string | null;
}

// The streaming example (a fake LLM: reasoning, a tool call, its result, the answer token by token)
// deployed from git by the built CLI, run by the local runtime, watched and steered through the CLI:
// interrupt mid-stream, a watch that reconnects mid-message, and every double-texting policy.
describe.each(engines)('e2e on %s: streaming and turn control through the CLI', (engine) => {
  const e2e = useE2e(engine, {
    scratch: 'agentctl-e2e-turns',
    project: 'streaming',
    databasePrefix: 'agentctl_e2e_turns',
    // The example, not `agentctl init`'s agent, fast except for the slow answer.
    init: false,
    async prepare() {
      cpSync(EXAMPLE, e2e.projectDir, { recursive: true, filter: (src) => !src.includes('node_modules') });
      const file = path.join(e2e.projectDir, 'agentctl.json');
      const project = JSON.parse(readFileSync(file, 'utf8'));
      writeFileSync(file, JSON.stringify({ ...project, env: { TOKEN_DELAY_MS: '5', SLOW_TOKEN_DELAY_MS: '150' } }, null, 2));
      await e2e.git(['init', '-q', '-b', 'main']);
      await e2e.git(['add', '.']);
      await e2e.git(['commit', '-q', '-m', 'the streaming agent']);
    },
    // An interrupted handler that ignores its signal is cut off this soon.
    env: () => ({ AGENTCTL_INTERRUPT_GRACE_MS: '500' }),
    // The answers are checked to end with their newline.
    stripFinalNewline: false,
  });
  const { agentctl, json } = e2e;
  const messages = async (taskId: string): Promise<Msg[]> => (await json(['tasks', 'messages', taskId, '--limit', '500'])).messages;
  const texts = async (taskId: string) => (await messages(taskId)).filter((m) => m.content.type === 'text').map((m) => [m.content.text, m.streaming_status]);
  /** The slow answer (60 words, 150 ms apart) once it streams. */
  const slowAnswerStreaming = (taskId: string, after = 0) =>
    until(
      'the slow answer streaming',
      () => messages(taskId),
      (list) =>
        list.some((m) => m.sequence_id > after && m.content.type === 'text' && m.streaming_status === 'IN_PROGRESS' && /word\d/.test(m.content.text ?? '')),
    );
  const lastSequence = async (taskId: string) => Math.max(0, ...(await messages(taskId)).map((m) => m.sequence_id));
  /** Redeploys the same commit with another double-texting policy; the task moves to it. */
  const deployPolicy = async (policy: string) => {
    const version = await json(['deploy', '--double-texting', policy, '--force']);
    expect(version).toMatchObject({ status: 'ACTIVE', double_texting: policy });
  };

  test('an invalid double_texting in agentctl.json is refused at deploy, naming the choices', async () => {
    const file = path.join(e2e.projectDir, 'agentctl.json');
    const good = readFileSync(file, 'utf8');
    writeFileSync(file, JSON.stringify({ ...JSON.parse(good), double_texting: 'sometimes' }));
    try {
      const refused = await agentctl(['deploy']);
      expect(refused.exitCode).toBe(2);
      expect(refused.stderr).toContain(
        'agentctl.json is not a valid agentctl.json: double_texting: Invalid option: expected one of "enqueue"|"interrupt"|"reject"|"merge"',
      );
    } finally {
      writeFileSync(file, good);
    }
  });

  test('watch, reconnect mid-message, interrupt mid-stream, and every double-texting policy', { timeout: 600_000 }, async () => {
    const v1 = await json(['deploy']);
    expect(v1).toMatchObject({ status: 'ACTIVE', double_texting: 'enqueue' });
    const task = await json(['tasks', 'create']);

    // A whole turn through `tasks send --watch`: reasoning, the tool call, its result and the answer, then exit 0 when idle.
    const first = await agentctl(['tasks', 'send', task.id, 'how long is this', '--watch']);
    expect(first.exitCode, first.stderr).toBe(0);
    expect(first.stdout).toMatch(
      /^\(thinking\) The user asked something; counting its words first\.\n→ count_words\(\{"question":"how long is this"\}\) \[call_\d+\]\n← call_\d+ \{"words":4\}\nYou asked: "how long is this"\. That is 4 words long\.\n$/,
    );

    // A watch that drops in the middle of a message and resumes after what it saw gets the rest exactly once.
    const before = await lastSequence(task.id);
    const watch1 = agentctl(['tasks', 'watch', task.id, '--json', '--after', String(before)]);
    let seen = '';
    watch1.stdout!.on('data', (chunk: Buffer) => (seen += chunk.toString('utf8')));
    expect(await agentctl(['tasks', 'send', task.id, 'slow please'])).toMatchObject({ exitCode: 0 });
    const records = () =>
      seen
        .split('\n')
        .filter((line) => line.endsWith('}'))
        .map((line) => JSON.parse(line));
    const answerOf = (list: any[]) => list.find((r) => r.kind === 'message' && r.data.content.type === 'text')?.data;
    await until(
      'the first watch in the middle of the answer',
      async () => records(),
      (list) => {
        const answer = answerOf(list);
        return answer !== undefined && list.filter((r) => r.kind === 'message_delta' && r.data.message_id === answer.id).length >= 3;
      },
    );
    watch1.kill('SIGKILL');
    await watch1;
    const part1 = records();
    const answer = answerOf(part1);
    let rebuilt = answer.content.text as string;
    for (const r of part1) if (r.kind === 'message_delta' && r.data.message_id === answer.id) rebuilt += r.data.delta;
    const resumeAfter = part1.at(-1).sequence_id;
    const watch2 = agentctl(['tasks', 'watch', task.id, '--json', '--after', String(resumeAfter), '--until-idle']);

    // Interrupt mid-stream: the answer ends INTERRUPTED, the task stays RUNNING.
    const interrupted = await agentctl(['tasks', 'interrupt', task.id]);
    expect(interrupted.exitCode, interrupted.stderr).toBe(0);
    expect(interrupted.stderr).toContain(`Interrupting the running turn of task ${task.id}`);
    const ended = await until(
      'the answer interrupted',
      () => messages(task.id),
      (list) => list.some((m) => m.id === answer.id && m.streaming_status === 'INTERRUPTED'),
    );
    const stopped = ended.find((m) => m.id === answer.id)!;
    expect(stopped.streaming_error).toBe('The turn was interrupted');
    // Cut where the interrupt landed: after what the first watch saw, before the end (how much text a
    // delta carries depends on how fast requests return: the writer coalesces while one is in flight).
    const whole = `Thinking slowly about "slow please": ${Array.from({ length: 60 }, (_, i) => `word${i + 1}`).join(' ')}.`;
    const cut = stopped.content.text ?? '';
    expect(cut.startsWith(rebuilt), `${cut} after ${rebuilt}`).toBe(true);
    expect(whole.startsWith(cut), cut).toBe(true);
    expect(cut).not.toBe(whole);

    // The resumed watch ended with the turn (the agent idle): its deltas continue exactly where the first watch stopped.
    const resumed = await watch2;
    expect(resumed.exitCode, resumed.stderr).toBe(0);
    const part2 = resumed.stdout
      .trim()
      .split('\n')
      .map((line) => JSON.parse(line));
    expect(part2[0].sequence_id).toBe(resumeAfter + 1);
    for (const r of part2) {
      if (r.kind !== 'message_delta' || r.data.message_id !== answer.id) continue;
      expect(r.data.offset).toBe([...rebuilt].length);
      rebuilt += r.data.delta;
    }
    expect(rebuilt).toBe(stopped.content.text);
    expect(part2.at(-1)).toMatchObject({ kind: 'message_update', data: { id: answer.id, streaming_status: 'INTERRUPTED' } });
    expect((await json(['tasks', 'get', task.id])).status).toBe('RUNNING');
    const next = await agentctl(['tasks', 'send', task.id, 'and now', '--watch']);
    expect(next.exitCode, next.stderr).toBe(0);
    expect(next.stdout).toContain('You asked: "and now". That is 2 words long.\n');

    // enqueue (v1's policy): an event sent while the slow answer streams waits for it, then is answered.
    let mark = await lastSequence(task.id);
    expect(await agentctl(['tasks', 'send', task.id, 'slow again'])).toMatchObject({ exitCode: 0 });
    await slowAnswerStreaming(task.id, mark);
    const queued = await agentctl(['tasks', 'send', task.id, 'next one', '--watch']);
    expect(queued.exitCode, queued.stderr).toBe(0);
    expect((await texts(task.id)).slice(-2)).toEqual([
      [expect.stringMatching(/^Thinking slowly about "slow again": word1 .* word60\.$/), 'DONE'],
      ['You asked: "next one". That is 2 words long.', 'DONE'],
    ]);

    // interrupt: the new event interrupts the running turn, then is answered.
    await deployPolicy('interrupt');
    mark = await lastSequence(task.id);
    expect(await agentctl(['tasks', 'send', task.id, 'slow please'])).toMatchObject({ exitCode: 0 });
    await slowAnswerStreaming(task.id, mark);
    const overriding = await agentctl(['tasks', 'send', task.id, 'never mind', '--watch']);
    expect(overriding.exitCode, overriding.stderr).toBe(0);
    expect(overriding.stdout).toContain('You asked: "never mind". That is 2 words long.\n');
    expect((await texts(task.id)).slice(-2)).toEqual([
      [expect.stringMatching(/^Thinking slowly about "slow please": word1 /), 'INTERRUPTED'],
      ['You asked: "never mind". That is 2 words long.', 'DONE'],
    ]);

    // reject: while the slow answer streams the CLI shows the task_busy refusal (exit 5); once idle the event is taken.
    await deployPolicy('reject');
    mark = await lastSequence(task.id);
    expect(await agentctl(['tasks', 'send', task.id, 'slow please'])).toMatchObject({ exitCode: 0 });
    await slowAnswerStreaming(task.id, mark);
    const refused = await agentctl(['tasks', 'send', task.id, 'hurry up']);
    expect(refused.exitCode).toBe(5);
    expect(refused.stderr).toMatch(/is busy with a turn \(delivery \d+\) and its agent rejects events meanwhile \(double_texting: reject\)/);
    expect(refused.stderr).toContain('agentctl tasks interrupt');
    const refusedJson = await agentctl(['tasks', 'send', task.id, 'hurry up', '--json']);
    expect(JSON.parse(refusedJson.stderr.trim().split('\n').at(-1)!)).toMatchObject({ error: { code: 'task_busy', status: 409 } });
    expect(await agentctl(['tasks', 'interrupt', task.id])).toMatchObject({ exitCode: 0 });
    expect(await agentctl(['tasks', 'watch', task.id, '--after', String(mark), '--until-idle'])).toMatchObject({ exitCode: 0 });
    const taken = await agentctl(['tasks', 'send', task.id, 'hurry up', '--watch']);
    expect(taken.exitCode, taken.stderr).toBe(0);
    expect(taken.stdout).toContain('You asked: "hurry up". That is 2 words long.\n');

    // merge: events sent while a turn runs are answered together, in one turn.
    await deployPolicy('merge');
    mark = await lastSequence(task.id);
    expect(await agentctl(['tasks', 'send', task.id, 'slow please'])).toMatchObject({ exitCode: 0 });
    await slowAnswerStreaming(task.id, mark);
    expect(await agentctl(['tasks', 'send', task.id, 'first'])).toMatchObject({ exitCode: 0 });
    const merged = await agentctl(['tasks', 'send', task.id, 'second question', '--watch']);
    expect(merged.exitCode, merged.stderr).toBe(0);
    expect(merged.stdout).toContain('You asked 2 things at once: "first", "second question". That is 3 words long.\n');
    expect((await texts(task.id)).slice(-2)).toEqual([
      [expect.stringMatching(/^Thinking slowly about "slow please": word1 .* word60\.$/), 'DONE'],
      ['You asked 2 things at once: "first", "second question". That is 3 words long.', 'DONE'],
    ]);
    expect((await json(['tasks', 'get', task.id])).status).toBe('RUNNING');
  });
});
