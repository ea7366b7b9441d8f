// The echo agent: replies to every event, counts them in its state, reports progress, and keeps the
// last event's text in its workspace (synced with the task's filesystem around every handler).
import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { AgentServer, ConflictError } from 'agentctl/adk';

const server = new AgentServer({
  async onCreate(ctx, params) {
    try {
      await ctx.state.create({ events: 0 });
    } catch (error) {
      // A repeated delivery of task/create: the state is already there.
      if (!(error instanceof ConflictError)) throw error;
    }
    const topic = typeof params?.topic === 'string' ? ` about ${params.topic}` : '';
    await ctx.messages.send(`Hello! Send me anything${topic} and I will echo it.`);
    await ctx.tracker.update(0, 'waiting for the first event');
  },

  async onEvent(ctx, event) {
    const text = event.content.type === 'text' ? event.content.text : JSON.stringify(event.content.data);
    // Handlers of one task run one at a time, so read-then-merge cannot lose a count.
    const count = Number((await ctx.state.get())?.state.events ?? 0) + 1;
    await ctx.state.update({ events: count });
    await writeFile(path.join(ctx.workspace, 'last-event.txt'), `${text}\n`);
    await ctx.messages.send(`echo #${count}: ${text}`);
    await ctx.tracker.update(Math.min(100, count * 10), `handled ${count} event${count === 1 ? '' : 's'}`);
  },

  // A canceled task takes no new messages; the tracker still says how far it got.
  async onCancel(ctx) {
    const count = Number((await ctx.state.get())?.state.events ?? 0);
    await ctx.tracker.update(undefined, `canceled after ${count} event${count === 1 ? '' : 's'}`);
  },
});

await server.listen();
