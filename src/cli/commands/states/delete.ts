import { defineCommand } from '../../command.js';
import { confirmApply } from '../../confirm.js';
import { record } from '../../output/view.js';
import { findState, ifMatch, noState } from './shared.js';
import { agentctl } from '../../shell.js';
import { agent } from '../../options.js';

export default defineCommand({
  path: ['states', 'delete'],
  summary: 'Delete a state record (asks first; --yes to skip)',
  args: [{ name: 'state', description: 'st_ id (or use --task and --agent)' }],
  options: [
    { flags: '--task <task>', description: 'Task: task_ id or task name', field: 'task_id' },
    { ...agent, description: 'Agent (namespace/name or agt_ id)' },
    { flags: '--if-match <version>', description: 'Only if still at this version', integer: true },
  ],
  examples: ['agentctl states delete st_01J... --yes', 'agentctl states delete --task task_01J... --agent default/bot --yes'],
  notFoundNext: 'agentctl states list --task <task_id>',
  handler: async (ctx, [id], options) => {
    const target = await findState(ctx, id, options, 'agentctl states delete');
    if (!target.state) throw noState(target, options.agent);
    const { state } = target;
    const { data, raw } = await confirmApply(ctx, {
      question: `Delete state ${state.id} of task ${state.task_id}?`,
      retry: agentctl('states', 'delete', state.id, '--yes'),
      apply: () => ctx.call('deleteState', { params: { state_id: state.id } }, { headers: ifMatch(options.ifMatch) }),
    });
    ctx.success(data.message);
    return {
      json: raw,
      view: record([
        ['ID', data.id],
        ['Result', data.message],
      ]),
    };
  },
});
