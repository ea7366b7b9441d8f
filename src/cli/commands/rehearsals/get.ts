import { defineCommand } from '../../command.js';
import { rehearsalOutcome } from '../../rehearsal.js';

export default defineCommand({
  path: ['rehearsals', 'get'],
  summary: 'Show a rehearsal’s report (exit 1 when it found regressions)',
  args: [{ name: 'rehearsal', description: 'reh_ id (printed by tasks migrate --rehearse and tasks replay)', required: true }],
  examples: ['agentctl rehearsals get reh_01J...', 'agentctl rehearsals get reh_01J... --json'],
  handler: async (ctx, [id]) => {
    const { data, raw } = await ctx.call('getRehearsal', { params: { rehearsal_id: id } });
    return rehearsalOutcome(ctx, data, raw);
  },
});
