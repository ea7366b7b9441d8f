import { isIn, LIVE_VERSION_STATUSES, SETTLED_VERSION_STATUSES } from '../../contract/lifecycle.js';
import { plural } from '../../contract/plural.js';
import { defineCommand } from '../command.js';
import { CliError, usageError } from '../errors.js';
import { ExitCode } from '../exit-codes.js';
import { ApiRequestError } from '../../client/errors.js';
import type { Version } from '../../contract/resources.js';
import type { CommandContext } from '../context.js';
import { readGit } from '../git.js';
import { versionRecord } from '../output/resources.js';
import { record } from '../output/view.js';
import { parseAgentPath, requireAgentOption } from '../refs.js';
import { waitForVersion } from '../wait.js';
import {
  ACP_TYPES,
  boundsText,
  DEFAULT_ACP_TYPE,
  DEFAULT_DOUBLE_TEXTING,
  DEFAULT_SDK_TYPE,
  DEPLOY_REPLICAS,
  DOUBLE_TEXTING_POLICIES,
  SDK_TYPES,
} from '../../contract/enums.js';
import { gitRoot, readAgentProject, uploadSource } from '../source-upload.js';
import { agentctl } from '../shell.js';
import { agent, waitOptions } from '../options.js';

export default defineCommand({
  path: ['deploy'],
  summary: 'Deploy the current git commit as a new version and wait until it is ACTIVE or FAILED',
  description:
    'Reads the commit hash, branch, subject, author and dirty state from git in the current directory, and defaults (agent, acp_type, replicas, description, are_tasks_sticky, double_texting) from agentctl.json; flags override them.',
  options: [
    { ...agent, description: 'Agent as namespace/name (created on first deploy)' },
    {
      flags: '--image <url>',
      description: 'Container image of this version (without it: the commit’s tree is uploaded and run from source)',
      field: 'image_url',
    },
    { flags: '--branch <name>', description: 'Git branch to deploy as (default: the checked-out branch)' },
    { flags: '--replicas <n>', description: `Replicas, ${boundsText(DEPLOY_REPLICAS)}`, integer: true },
    { flags: '--sticky', description: 'Keep running tasks on their current version', field: 'are_tasks_sticky' },
    { flags: '--no-sticky', description: 'Move running tasks to the new version (the default)', field: 'are_tasks_sticky' },
    { flags: '--sdk-type <type>', description: 'Agent SDK kind', choices: SDK_TYPES, default: DEFAULT_SDK_TYPE },
    { flags: '--acp-type <type>', description: `Client-protocol server type (default: agentctl.json, else ${DEFAULT_ACP_TYPE})`, choices: ACP_TYPES },
    { flags: '--description <text>', description: 'Agent description (first deploy)' },
    {
      flags: '--double-texting <policy>',
      description: `What an event arriving while a turn runs does (default: agentctl.json, else ${DEFAULT_DOUBLE_TEXTING})`,
      choices: DOUBLE_TEXTING_POLICIES,
    },
    { flags: '--allow-dirty', description: 'Deploy even with uncommitted changes (without --image: uploads the work tree as it is)' },
    { flags: '--force', description: 'Deploy even when the branch’s newest version, still live, is of this same commit (and image)' },
    ...waitOptions,
  ],
  examples: [
    'agentctl deploy --agent default/bot --image registry.local/bot:1.4.0',
    'agentctl deploy  # from agentctl.json, uploading the commit’s tree as the source',
    'agentctl deploy --agent default/bot --image registry.local/bot:pr-12 --branch feature/search --sticky --detach --json',
  ],
  notFoundNext: 'agentctl namespaces list',
  handler: async (ctx, _args, options) => {
    const git = await readGit(ctx.io.cwd);
    // agentctl.json gives the defaults; flags override them.
    const root = await gitRoot(ctx.io.cwd);
    const project = await readAgentProject(root);
    const agent = parseAgentPath(requireAgentOption(options.agent ?? project?.agent, 'agentctl deploy'));
    const agentName = `${agent.namespace_slug}/${agent.agent_name}`;
    if (git.dirty && !options.allowDirty) {
      throw usageError(
        'The work tree has uncommitted changes',
        'Commit them, or pass --allow-dirty to deploy anyway (the version is marked dirty).',
        agentctl(
          'deploy',
          '--agent',
          agentName,
          ...(options.image ? ['--image', options.image] : []),
          ...(options.branch ? ['--branch', options.branch] : []),
          '--allow-dirty',
        ),
      );
    }
    const branch = options.branch ?? git.branch;
    if (!branch) throw usageError('HEAD is detached, so there is no branch to deploy to', 'Pass --branch <name>.');
    // Before a word of progress: the profile's key and the server answer, and the branch's newest version is known.
    const newest = await newestVersion(ctx, agent, branch);
    if (newest && !options.force && isRedeploy(newest, { hash: git.hash, dirty: git.dirty, image: options.image })) {
      throw new CliError(
        `v${newest.number} of ${agentName} on ${branch} already runs ${git.hash.slice(0, 7)} "${newest.git_message}" (${newest.status}): deploying it again would make an identical v${newest.number + 1}`,
        {
          exitCode: ExitCode.conflict,
          code: 'same_commit',
          hint: 'Commit a change first, or pass --force to deploy the same commit again (a fresh start of it).',
          next: agentctl(
            'deploy',
            '--agent',
            agentName,
            ...(options.image ? ['--image', options.image] : []),
            ...(options.branch ? ['--branch', options.branch] : []),
            '--force',
          ),
        },
      );
    }
    ctx.info(`Deploying ${git.hash.slice(0, 7)} "${git.subject}" of ${branch}${git.dirty ? ' (dirty)' : ''} as ${agentName}`);
    // Without an image the source itself is deployed: uploaded as a filesystem the runtime runs from.
    const sourceFilesystemId = options.image ? undefined : await uploadSource(ctx, root, agent.namespace_slug, Boolean(options.allowDirty));
    const { data, raw } = await ctx.call('deploy', {
      body: {
        namespace: agent.namespace_slug,
        agent_name: agent.agent_name,
        branch,
        git_hash: git.hash,
        git_message: git.subject,
        author_name: git.authorName,
        author_email: git.authorEmail,
        image_url: options.image ?? `local://${sourceFilesystemId}`,
        sdk_type: options.sdkType,
        acp_type: options.acpType ?? project?.acp_type ?? DEFAULT_ACP_TYPE,
        is_dirty: git.dirty,
        replicas: options.replicas ?? project?.replicas,
        are_tasks_sticky: options.sticky ?? project?.are_tasks_sticky,
        double_texting: options.doubleTexting ?? project?.double_texting,
        description: options.description ?? project?.description,
        source_filesystem_id: sourceFilesystemId ?? null,
      },
    });
    if (data.tasks_migrated) ctx.info(`${plural(data.tasks_migrated, 'running task')} moved to ${data.version_id}`);
    if (options.detach || isIn(SETTLED_VERSION_STATUSES, data.version_status)) {
      ctx.success(`${data.message} (${data.version_id}, ${data.version_status})`);
      if (options.detach)
        ctx.info(
          `Follow it with: ${agentctl('versions', 'get', data.version_id)} (it turns ACTIVE when its runtime reports ready: ${agentctl('versions', 'register', data.version_id)})`,
        );
      return {
        json: raw,
        view: record([
          ['Version', `v${data.version_number}`],
          ['ID', data.version_id],
          ['Status', data.version_status, 'status'],
          ['Agent', agentName],
          ['Agent ID', data.agent_id, 'text', 'wide'],
          ['Branch', branch],
          ['Branch ID', data.branch_id, 'text', 'wide'],
          ['Tasks moved', data.tasks_migrated],
        ]),
      };
    }
    const settled = await waitForVersion(ctx, data.version_id, options.timeout, 'Deploy');
    return { json: settled.raw, view: versionRecord(settled.version) };
  },
});

/** The branch's newest version; undefined before the agent's first deploy (or its branch's). */
async function newestVersion(ctx: CommandContext, agent: { namespace_slug: string; agent_name: string }, branch: string): Promise<Version | undefined> {
  try {
    const { data } = await ctx.call('listAgentVersions', { params: agent, query: { branch, limit: 1 } });
    return data.versions[0];
  } catch (error) {
    // An agent not deployed yet (or not visible to this key: the deploy itself says what it may do).
    if (error instanceof ApiRequestError && error.status === 404) return undefined;
    throw error;
  }
}

/**
 * Whether this deploy would repeat the branch's newest version: the same clean commit, still live,
 * and the same image (a new image of one commit, or a dirty tree, is a new version worth making).
 */
function isRedeploy(newest: Version, next: { hash: string; dirty: boolean; image: string | undefined }): boolean {
  if (newest.git_hash !== next.hash || newest.is_dirty || next.dirty || !isIn(LIVE_VERSION_STATUSES, newest.status)) return false;
  const fromSource = newest.image_url.startsWith('local://');
  return next.image === undefined ? fromSource : !fromSource && newest.image_url === next.image;
}
