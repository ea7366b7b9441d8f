import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { defineCommand } from '../../command.js';
import type { CommandContext } from '../../context.js';
import { CliError, needsFlag, usageError } from '../../errors.js';
import { ExitCode } from '../../exit-codes.js';
import { record } from '../../output/view.js';
import { agentPathOf, requireAgentOption } from '../../refs.js';
import { agentctl } from '../../shell.js';
import { agent } from '../../options.js';

/** One trailing line break goes (what `echo` and editors add); the rest is the value as given. */
const withoutFinalNewline = (text: string) => text.replace(/\r?\n$/, '');

/** The value: from standard input, a file, or a hidden prompt; never from an argument (shell history keeps those). */
async function readValue(ctx: CommandContext, name: string, options: { valueStdin?: boolean; valueFile?: string }, retry: string): Promise<string> {
  if (options.valueStdin && options.valueFile) throw usageError('Give the value with --value-stdin or --value-file, not both');
  let value: string;
  if (options.valueStdin) {
    if (ctx.io.stdin.isTTY) throw usageError('--value-stdin reads the value from standard input: pipe it in', undefined, `${retry} --value-stdin < value.txt`);
    value = withoutFinalNewline(await ctx.readStdin());
  } else if (options.valueFile) {
    const file = path.resolve(ctx.io.cwd, options.valueFile);
    try {
      value = withoutFinalNewline(await readFile(file, 'utf8'));
    } catch (error) {
      throw new CliError(`Cannot read ${file}: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}`, {
        exitCode: ExitCode.usage,
        code: 'usage',
      });
    }
  } else {
    if (!ctx.canPrompt()) throw needsFlag('--value-stdin', `Setting ${name} needs its value`, `${retry} --value-stdin < value.txt`);
    value = await (await ctx.prompts()).password({ message: `Value of ${name} (hidden)` });
  }
  if (value === '') throw usageError(`The value of ${name} is empty`, 'A secret needs a value; to remove one use agentctl secrets delete.');
  return value;
}

export default defineCommand({
  path: ['secrets', 'set'],
  summary: 'Create or replace a secret of an agent (value from a hidden prompt, --value-stdin or --value-file)',
  description:
    'The agent gets it as an environment variable of that name; its running versions restart one replica at a time. Never give the value as an argument: shell history keeps it. With --env, only versions whose branch falls in that environment get this value (others keep the agent-wide one).',
  args: [{ name: 'name', description: 'Environment variable name (letters, digits and _, not starting with a digit)', required: true }],
  options: [
    agent,
    { flags: '--env <name>', description: 'Only for versions whose branch falls in this environment', field: 'environment' },
    { flags: '--value-stdin', description: 'Read the value from standard input (one final newline is dropped)' },
    { flags: '--value-file <path>', description: 'Read the value from a file (one final newline is dropped)' },
  ],
  examples: [
    'agentctl secrets set OPENAI_API_KEY',
    'printf %s "$OPENAI_API_KEY" | agentctl secrets set OPENAI_API_KEY --agent default/bot --value-stdin',
    'agentctl secrets set DATABASE_URL --env production --value-file ./prod-db-url.txt',
  ],
  notFoundNext: 'agentctl agents list',
  handler: async (ctx, [name], options) => {
    const agentRef = requireAgentOption(options.agent, 'agentctl secrets set');
    const retry = agentctl('secrets', 'set', name, '--agent', agentRef, ...(options.env ? ['--env', options.env] : []));
    const value = await readValue(ctx, name, options, retry);
    const params = { ...(await agentPathOf(await ctx.client(), agentRef)), secret_name: name };
    const { data, raw } = await ctx.call('setSecret', { params, body: { value, ...(options.env ? { environment: options.env } : {}) } });
    const where = data.environment ? ` in environment ${data.environment}` : '';
    ctx.success(
      `${data.revision === 1 ? 'Created' : 'Replaced'} secret ${data.name} of ${params.namespace_slug}/${params.agent_name}${where}; running versions restart one replica at a time`,
    );
    return {
      json: raw,
      view: record([
        ['Name', data.name],
        ['Scope', data.scope],
        ['Environment', data.environment],
        ['Revision', data.revision],
        ['Updated', data.updated_at],
      ]),
    };
  },
});
