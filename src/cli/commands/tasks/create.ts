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
    {
      flags: '--branch <name>',
      description: 'Git branch (default: the dev branch while `agentctl dev` runs in this directory, else the one the production environment names)',
    },
    { flags: '--name <name>', description: 'Unique task name' },
    { flags: '--params <json>', description: 'Task parameters: a JSON object, @file.json, or - for standard input' },
    { flags: '--project <id>', description: 'Use the filesystem of this project (prj_ id)', field: 'project_id' },
    { flags: '--watch', description: 'Then follow the task as `tasks watch` does (exit 0 when it completes)' },
  ],
  examples: ['agentctl tasks create --agent default/bot', 'agentctl tasks create --agent default/bot --name report-42 --params \'{"topic":"sales"}\' --json'],
  notFoundNext: 'agentctl agents list',
  handler: async (ctx, _args, options) => {
    const agent = requireAgentOption(options.agent, 'agentctl tasks create');
    // While `agentctl dev` runs this directory's agent, tasks go to its dev branch unless told otherwise.
    let branch = options.branch;
    if (branch === undefined) {
      const { liveDevSession } = await import('../../dev/session-file.js');
      const session = liveDevSession(ctx.env, ctx.io.cwd, ctx.credentials().baseUrl);
      if (session?.agent === agent) {
        branch = session.branch;
        ctx.info(`On ${branch}: agentctl dev (pid ${session.pid}) runs ${agent} from this directory; --branch main for the deployed agent`);
      }
    }
    const { data, raw } = await ctx.call('createTask', {
      body: {
        ...(agent.startsWith('agt_') ? { agent_id: agent } : { agent_name: agent }),
        branch,
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
