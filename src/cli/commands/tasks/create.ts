import { defineCommand } from '../../command.js';
import { readJsonObject } from '../../json-input.js';
import { taskRecord } from '../../output/resources.js';
import { requireAgentOption } from '../../refs.js';
import { watchTask } from './conversation.js';
import { agent } from '../../options.js';

export default defineCommand({
  path: ['tasks', 'create'],
  summary: 'Create a task on an agent (it starts RUNNING)',
  options: [
    agent,
    { flags: '--branch <name>', description: 'Git branch (default: the one the production environment names)' },
    { flags: '--name <name>', description: 'Unique task name' },
    { flags: '--params <json>', description: 'Task parameters: a JSON object, @file.json, or - for standard input' },
    { flags: '--project <id>', description: 'Use the filesystem of this project (prj_ id)', field: 'project_id' },
    { flags: '--watch', description: 'Then follow the task as `tasks watch` does (exit 0 when it completes)' },
  ],
  examples: ['agentctl tasks create --agent default/bot', 'agentctl tasks create --agent default/bot --name report-42 --params \'{"topic":"sales"}\' --json'],
  notFoundNext: 'agentctl agents list',
  handler: async (ctx, _args, options) => {
    const agent = requireAgentOption(options.agent, 'agentctl tasks create');
    const { data, raw } = await ctx.call('createTask', {
      body: {
        ...(agent.startsWith('agt_') ? { agent_id: agent } : { agent_name: agent }),
        branch: options.branch,
        name: options.name,
        params: options.params !== undefined ? await readJsonObject(ctx, options.params, '--params') : undefined,
        project_id: options.project,
      },
    });
    ctx.success(`Created task ${data.id} on ${data.current_version_id ?? 'no version'}`);
    // --watch: the task's stream from its first record (its creation) until it ends.
    if (options.watch) return { exitCode: await watchTask(ctx, data.id) };
    return { json: raw, view: taskRecord(data) };
  },
});
