// The streaming agent: answers each event the way an LLM loop does, written as it is produced:
// a reasoning summary, a tool call (its arguments streamed), the tool's result, then the answer
// token by token. The "model" is a fake with deterministic tokens (TOKEN_DELAY_MS apart), so a
// watcher sees the same transcript every time.
import { AgentServer } from 'agentctl/adk';

const tokenDelayMs = Number(process.env.TOKEN_DELAY_MS ?? 20);

/** The fake model: yields `text` a word at a time. */
async function* fakeModel(text: string): AsyncGenerator<string> {
  for (const token of text.match(/\S+\s*/g) ?? []) {
    await new Promise((resolve) => setTimeout(resolve, tokenDelayMs));
    yield token;
  }
}

/** The fake tool: counts the words of a question. */
const countWords = (question: string) => ({ words: question.split(/\s+/).filter(Boolean).length });

const server = new AgentServer({
  async onEvent(ctx, event) {
    const question = event.content.type === 'text' ? event.content.text : JSON.stringify(event.content);
    await ctx.messages.stream('reasoning').from(fakeModel('The user asked something; counting its words first.'));
    const callId = `call_${event.sequence_id}`;
    const args = JSON.stringify({ question });
    await ctx.messages.stream({ type: 'tool_request', name: 'count_words', call_id: callId }).from(fakeModel(args));
    const result = countWords(question);
    await ctx.messages.send({ type: 'tool_response', call_id: callId, result });
    await ctx.messages.stream().from(fakeModel(`You asked: "${question}". That is ${result.words} words long.`));
  },
});

await server.listen();
