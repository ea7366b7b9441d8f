// A sync agent (`acp_type: sync`): `message/send` is answered inline, and what onMessage returns is
// recorded as the agent's messages and handed back to the caller at once.
import { AgentServer } from 'agentctl/adk';

const server = new AgentServer({
  onMessage(_ctx, content) {
    return content.type === 'text' ? `echo: ${content.text}` : { type: 'data', data: { echo: content.data } };
  },
});

await server.listen();
