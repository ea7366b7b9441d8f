// The streaming agent: answers each event the way an LLM loop does, written as it is produced:
// a reasoning summary, a tool call (its arguments streamed), the tool's result, then the answer
// token by token. The "model" is a fake with deterministic tokens (TOKEN_DELAY_MS apart), so a
// watcher sees the same transcript every time.
//
// Turn control (README "Interrupt and double-texting"): an event starting with "slow" gets a long
// answer, SLOW_TOKEN_DELAY_MS per token, to interrupt mid-stream; an open stream ends INTERRUPTED by
// itself when `ctx.signal` fires. One starting with "stubborn" ignores the signal (it waits
// STUBBORN_MS), so the platform's grace period cuts it off. Under the `merge` policy one turn
// answers every event that arrived meanwhile: `ctx.batch`.
import { setTimeout as sleep } from 'node:timers/promises';
import { AgentServer, type Event } from 'agentctl/adk';

const tokenDelayMs = Number(process.env.TOKEN_DELAY_MS ?? 20);
const slowTokenDelayMs = Number(process.env.SLOW_TOKEN_DELAY_MS ?? 250);
const stubbornMs = Number(process.env.STUBBORN_MS ?? 60_000);

/** The fake model: yields `text` a word at a time. */
async function* fakeModel(text: string, delayMs = tokenDelayMs): AsyncGenerator<string> {
  for (const token of text.match(/\S+\s*/g) ?? []) {
    await sleep(delayMs);
    yield token;
  }
}

/** The fake tool: counts the words of a question. */
const countWords = (question: string) => ({ words: question.split(/\s+/).filter(Boolean).length });

const textOf = (event: Event) => (event.content.type === 'text' ? event.content.text : JSON.stringify(event.content));

const server = new AgentServer({
  async onEvent(ctx, event) {
    const questions = ctx.batch.map(textOf);
    const question = questions.join(' ');
    if (question.startsWith('stubborn')) {
      await ctx.messages.send('Working on it, and not listening to interrupts.');
      await sleep(stubbornMs); // ignores ctx.signal on purpose
      return;
    }
    await ctx.messages.stream('reasoning').from(fakeModel('The user asked something; counting its words first.'));
    const callId = `call_${event.sequence_id}`;
    const args = JSON.stringify({ question });
    await ctx.messages.stream({ type: 'tool_request', name: 'count_words', call_id: callId }).from(fakeModel(args));
    const result = countWords(question);
    await ctx.messages.send({ type: 'tool_response', call_id: callId, result });
    if (question.startsWith('slow')) {
      const words = Array.from({ length: 60 }, (_, i) => `word${i + 1}`).join(' ');
      await ctx.messages.stream().from(fakeModel(`Thinking slowly about "${question}": ${words}.`, slowTokenDelayMs));
      return;
    }
    const asked =
      questions.length === 1 ? `You asked: "${question}".` : `You asked ${questions.length} things at once: ${questions.map((q) => `"${q}"`).join(', ')}.`;
    await ctx.messages.stream().from(fakeModel(`${asked} That is ${result.words} words long.`));
  },
});

await server.listen();
