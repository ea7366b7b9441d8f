import { execa } from 'execa';
import { existsSync } from 'node:fs';
import { mkdir, readdir, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { AGENT_PROJECT_FILE, AgentProjectFile } from '../../contract/agent-project.js';
import { defineCommand } from '../command.js';
import type { CommandContext } from '../context.js';
import { CliError, usageError } from '../errors.js';
import { ExitCode } from '../exit-codes.js';
import { record } from '../output/view.js';
import { shellCommand } from '../shell.js';
import { packageRoot } from '../package-root.js';
import { agent } from '../options.js';
import { ACP_TYPES } from '../../contract/enums.js';

/** What to run after init: deploy, after starting a server when none answers at the profile's URL. */
async function nextSteps(ctx: CommandContext, cd: string): Promise<string> {
  let baseUrl: string | undefined;
  try {
    baseUrl = ctx.credentials().baseUrl;
    const { createClient } = await import('../../client/index.js');
    await createClient({ baseUrl, retries: 0, timeoutMs: 1000, shortLived: true, signal: ctx.signal }).readyz();
    return `Next: ${cd} && agentctl deploy`;
  } catch {
    // Nothing answers there (or the profile is unusable): a deploy would fail, so start a server first.
    return `Next: no agentctl service answers${baseUrl ? ` at ${baseUrl}` : ''}; start one, then deploy: agentctl server start --detach && ${cd} && agentctl deploy`;
  }
}

/** `agentctl init [DIR]`: a new agent project on the ADK that typechecks, runs and deploys as written. */
export default defineCommand({
  path: ['init'],
  summary: 'Write a new agent project (package.json, tsconfig, agentctl.json, src/index.ts on the ADK, README) and commit it',
  description: 'Refuses a non-empty directory unless --force. node_modules/agentctl links this agentctl (git-ignored), so the project needs no registry.',
  args: [{ name: 'dir', description: 'Directory to create (default: the current one)' }],
  options: [
    { ...agent, description: 'Agent as namespace/name (default: default/<directory name>)', complete: undefined },
    { flags: '--acp-type <type>', description: 'async (events; default) or sync (messages answered inline)', choices: ACP_TYPES, default: 'async' },
    { flags: '--force', description: 'Write into a non-empty directory (same-named files are replaced)' },
    { flags: '--no-git', description: 'Do not create a git repository and first commit' },
  ],
  examples: ['agentctl init my-bot', 'agentctl init . --agent team/support-bot --force', 'agentctl init answers --acp-type sync'],
  handler: async (ctx, args, options) => {
    const dir = path.resolve(ctx.io.cwd, args[0] ?? '.');
    const dirName = path.basename(dir);
    const agent = options.agent ?? `default/${slug(dirName)}`;
    const parsed = AgentProjectFile.safeParse({ agent, acp_type: options.acpType });
    if (!parsed.success)
      throw usageError(`Not an agent name: ${agent}`, 'Give --agent as namespace/name: lowercase letters, digits and dashes, e.g. default/my-bot.');
    const entries = existsSync(dir) ? await readdir(dir) : [];
    if (entries.length && !options.force) {
      throw new CliError(`${dir} is not empty`, {
        exitCode: ExitCode.conflict,
        code: 'directory_not_empty',
        hint: 'Pick a new directory, or pass --force to write the project files into this one (same-named files are replaced).',
      });
    }
    const project = parsed.data;
    const taken = await existingAgent(ctx, project.agent);
    const files: Record<string, string> = {
      'package.json': `${JSON.stringify({ name: slug(dirName), version: '0.1.0', private: true, type: 'module', scripts: { start: 'node src/index.ts', typecheck: 'tsc --noEmit' } }, null, 2)}\n`,
      'tsconfig.json': TSCONFIG,
      [AGENT_PROJECT_FILE]: `${JSON.stringify({ agent: project.agent, entry: project.entry, acp_type: project.acp_type, description: '' }, null, 2)}\n`,
      'src/index.ts': project.acp_type === 'sync' ? SYNC_AGENT : ASYNC_AGENT,
      'README.md': readme(project.agent, project.acp_type),
      '.gitignore': 'node_modules\n',
    };
    for (const [name, text] of Object.entries(files)) {
      await mkdir(path.dirname(path.join(dir, name)), { recursive: true });
      await writeFile(path.join(dir, name), text);
    }
    // Like the local runtime does for a deployed copy: `agentctl/adk` resolves to this agentctl, so the
    // project needs nothing from a registry; git ignores the link.
    const link = path.join(dir, 'node_modules', 'agentctl');
    if (!existsSync(link)) {
      await mkdir(path.dirname(link), { recursive: true });
      await symlink(packageRoot(), link, 'dir');
    }
    const committed = options.git === false ? false : await commitFirst(dir);
    ctx.success(`Created ${project.agent} in ${dir}`);
    if (!options.agent && project.agent !== `default/${dirName}`)
      ctx.info(`The agent is named ${project.agent}, from the directory name "${dirName}" (--agent ns/name picks another).`);
    if (taken)
      ctx.warn(
        `${project.agent} already exists on ${taken} and this project deploys to it: pass --agent ns/<new name> (or edit agentctl.json) for an agent of its own.`,
      );
    ctx.info(await nextSteps(ctx, shellCommand('cd', path.relative(ctx.io.cwd, dir) || '.')));
    return {
      json: {
        directory: dir,
        agent: project.agent,
        acp_type: project.acp_type,
        files: [...Object.keys(files), 'node_modules/agentctl'],
        git_commit: committed || null,
      },
      view: record([
        ['Directory', dir],
        ['Agent', project.agent],
        ['Type', project.acp_type],
        ['Files', Object.keys(files).join(', ')],
        ['Commit', committed || '-'],
      ]),
    };
  },
});

/**
 * Where an agent of this name already exists: the service the profile points at, asked once with a
 * short timeout; nothing when there is no key or no answer (init works offline).
 */
async function existingAgent(ctx: CommandContext, agent: string): Promise<string | undefined> {
  let credentials;
  try {
    credentials = ctx.credentials();
  } catch {
    return undefined;
  }
  if (!credentials.apiKey) return undefined;
  const { createClient } = await import('../../client/index.js');
  const client = createClient({ baseUrl: credentials.baseUrl, apiKey: credentials.apiKey, retries: 0, timeoutMs: 2000, shortLived: true, signal: ctx.signal });
  const [namespace_slug, agent_name] = agent.split('/') as [string, string];
  try {
    await client.getAgentByName({ params: { namespace_slug, agent_name } });
    return credentials.baseUrl;
  } catch {
    return undefined;
  }
}

const slug = (name: string) =>
  name
    .toLowerCase()
    .replace(/[^a-z0-9_-]+/g, '-')
    .replace(/^[-_]+|[-_]+$/g, '') || 'agent';

/** `git init` and a first commit (an identity is lent only when git has none configured). */
async function commitFirst(dir: string): Promise<string | false> {
  const git = (args: string[]) => execa('git', args, { cwd: dir, stripFinalNewline: true });
  try {
    if (!existsSync(path.join(dir, '.git'))) await git(['init', '-q', '-b', 'main']);
    const identity = (await git(['config', 'user.email']).catch(() => ({ stdout: '' }))).stdout
      ? []
      : ['-c', 'user.name=agentctl init', '-c', 'user.email=agentctl@localhost'];
    await git(['add', '-A']);
    await git([...identity, 'commit', '-q', '-m', 'New agent from agentctl init']);
    return (await git(['rev-parse', 'HEAD'])).stdout;
  } catch (error) {
    const missing = (error as { code?: string }).code === 'ENOENT';
    throw new CliError(
      missing
        ? 'The files are written, but git is not installed, so there is no repository yet'
        : `The files are written, but git failed: ${(error as { stderr?: string }).stderr || (error as Error).message}`,
      {
        hint: 'Install git, then run git init && git add -A && git commit -m "first version" in the directory.',
      },
    );
  }
}

const TSCONFIG = `{
  "compilerOptions": {
    "target": "ES2023",
    "module": "NodeNext",
    "moduleResolution": "NodeNext",
    "strict": true,
    "noEmit": true,
    "allowImportingTsExtensions": true,
    "erasableSyntaxOnly": true,
    "verbatimModuleSyntax": true,
    "skipLibCheck": true
  },
  "include": ["src"]
}
`;

// Node 24 runs this file as it is (erasable TypeScript only: no enums, no namespaces).
const ASYNC_AGENT = `import { AgentServer, ConflictError } from 'agentctl/adk';

const server = new AgentServer({
  // A new task: start its state and say hello.
  async onCreate(ctx, params) {
    try {
      await ctx.state.create({ events: 0 });
    } catch (error) {
      if (!(error instanceof ConflictError)) throw error; // a repeated delivery: already there
    }
    const topic = typeof params?.topic === 'string' ? \` about \${params.topic}\` : '';
    await ctx.messages.send(\`Hello! Send me anything\${topic} and I will echo it.\`);
    await ctx.tracker.update(0, 'waiting for the first event');
  },

  // An event sent to the task (agentctl tasks send <task> "hello"): echo it, count it.
  async onEvent(ctx, event) {
    const text = event.content.type === 'text' ? event.content.text : JSON.stringify(event.content.data);
    const count = Number((await ctx.state.get())?.state.events ?? 0) + 1;
    await ctx.state.update({ events: count });
    await ctx.messages.send(\`echo #\${count}: \${text}\`);
    await ctx.tracker.update(Math.min(100, count * 10), \`handled \${count} event\${count === 1 ? '' : 's'}\`);
  },

  // A canceled task takes no new messages; the tracker still says how far it got.
  async onCancel(ctx) {
    await ctx.tracker.update(undefined, 'canceled');
  },
});

await server.listen();
`;

const SYNC_AGENT = `import { AgentServer } from 'agentctl/adk';

const server = new AgentServer({
  // Answered inline: what this returns is recorded as the agent's reply and sent back at once.
  onMessage(_ctx, content) {
    return content.type === 'text' ? \`echo: \${content.text}\` : { type: 'data', data: { echo: content.data } };
  },
});

await server.listen();
`;

function readme(agent: string, acpType: string): string {
  return `# ${agent}

An agent on the agentctl ADK (\`agentctl/adk\`), ${acpType === 'sync' ? 'sync: it answers each message inline' : 'async: it handles task creation, events and cancellation'}.
Node 24 runs \`src/index.ts\` directly; there is no build step.

\`\`\`sh
agentctl server start --detach        # the service, if none is running
agentctl deploy                       # this commit becomes a version; the runtime starts it
agentctl tasks create --params '{"topic":"x"}'
agentctl tasks send <task> "hello"    # the agent's reply streams back
agentctl tasks watch <task>
\`\`\`

- \`agentctl.json\` names the agent (\`${agent}\`) and how it runs; every agentctl command run here takes its \`--agent\` from it.
- \`node_modules/agentctl\` links the agentctl you ran \`init\` with (for your editor and \`npm run typecheck\`); the runtime links it the same way when it runs a version.
- The handlers get a TaskContext: \`ctx.task\`, \`ctx.event\`, \`ctx.messages.send()\`, \`ctx.state.get/create/update/delete()\`, \`ctx.events.list()\`, \`ctx.tracker.update(progress, message)\`, and \`ctx.workspace\` (a directory synced with the task's filesystem around every handler).
`;
}
