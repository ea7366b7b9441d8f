import { defineCommand } from '../../command.js';
import { usageError } from '../../errors.js';
import { readJsonObject } from '../../json-input.js';
import { agent } from '../../options.js';
import { requireAgentOption } from '../../refs.js';
import { MISSED_TICK_POLICIES } from '../../../contract/enums.js';
import { scheduleRecord } from './shared.js';

export default defineCommand({
  path: ['schedules', 'create'],
  summary: 'Run an agent on a timetable: each cron tick creates a task (or sends an event to a named task)',
  description:
    'CRON has 5 fields (minute hour day-of-month month day-of-week) or 6 with seconds first, read in --tz. ' +
    'Ticks missed while no server ran are skipped, or run once with --missed catch-up-one.',
  options: [
    agent,
    { flags: '--cron <expr>', description: 'Cron expression, e.g. "*/5 * * * *" (6 fields: seconds first)' },
    { flags: '--tz <zone>', description: 'IANA time zone the expression is read in (default UTC)', field: 'timezone' },
    { flags: '--name <name>', description: 'A name, unique per agent' },
    { flags: '--params <json>', description: 'Parameters of each task: a JSON object, @file.json, or - for standard input' },
    { flags: '--branch <name>', description: 'Git branch whose serving version gets the tasks (default: production’s)' },
    { flags: '--task <name>', description: 'Instead of new tasks: send --event to this long-lived task (by name)', field: 'task_name' },
    { flags: '--event <json>', description: 'With --task: the event data, a JSON object (or @file.json)' },
    { flags: '--missed <policy>', description: 'Ticks missed while no server ran: skip them, or run one for them all', choices: MISSED_TICK_POLICIES },
  ],
  examples: [
    'agentctl schedules create --agent default/bot --cron "*/5 * * * *" --params \'{"report":"daily"}\'',
    'agentctl schedules create --agent default/bot --cron "0 9 * * 1-5" --tz Europe/Paris --task inbox --event \'{"poll":true}\' --json',
  ],
  notFoundNext: 'agentctl agents list',
  handler: async (ctx, _args, options) => {
    const agentRef = requireAgentOption(options.agent, 'agentctl schedules create');
    if (!options.cron) throw usageError('Missing --cron', 'Give the timetable as a cron expression.', 'agentctl schedules create --cron "*/5 * * * *"');
    if ((options.task === undefined) !== (options.event === undefined)) {
      throw usageError('Give --task and --event together', 'A schedule either creates tasks (--params) or sends --event to the task --task names.');
    }
    const { data, raw } = await ctx.call('createSchedule', {
      body: {
        ...(agentRef.startsWith('agt_') ? { agent_id: agentRef } : { agent_name: agentRef }),
        cron: options.cron,
        ...(options.tz ? { timezone: options.tz } : {}),
        name: options.name,
        branch: options.branch,
        params: options.params !== undefined ? await readJsonObject(ctx, options.params, '--params') : undefined,
        task_name: options.task,
        event: options.event !== undefined ? { type: 'data' as const, data: await readJsonObject(ctx, options.event, '--event') } : undefined,
        ...(options.missed ? { missed: options.missed } : {}),
      },
    });
    ctx.success(`Created schedule ${data.id}; next run ${data.next_run_at}`);
    return { json: raw, view: scheduleRecord(data) };
  },
});
