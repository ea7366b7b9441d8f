import { isIn, SETTLED_VERSION_STATUSES } from '../../contract/lifecycle.js';
import { plural } from '../../contract/plural.js';
import { defineCommand } from '../command.js';
import { usageError } from '../errors.js';
import { readGit } from '../git.js';
import { versionRecord } from '../output/resources.js';
import { record } from '../output/view.js';
import { parseAgentPath, requireAgentOption } from '../refs.js';
import { waitForVersion } from '../wait.js';
import { ACP_TYPES, boundsText, DEFAULT_ACP_TYPE, DEFAULT_SDK_TYPE, DEPLOY_REPLICAS, SDK_TYPES } from '../../contract/enums.js';
import { gitRoot, readAgentProject, uploadSource } from '../source-upload.js';
import { agentctl } from '../shell.js';
import { agent, waitOptions } from '../options.js';

export default defineCommand({
  path: ['deploy'],
  summary: 'Deploy the current git commit as a new version and wait until it is ACTIVE or FAILED',
  description: 'Reads the commit hash, branch, subject, author and dirty state from git in the current directory, and defaults (agent, acp_type, replicas, description, are_tasks_sticky) from agentctl.json; flags override them.',
  options: [
    { ...agent, description: 'Agent as namespace/name (created on first deploy)' },
    { flags: '--image <url>', description: 'Container image of this version (without it: the commit’s tree is uploaded and run from source)', field: 'image_url' },
    { flags: '--branch <name>', description: 'Git branch to deploy as (default: the checked-out branch)' },
    { flags: '--replicas <n>', description: `Replicas, ${boundsText(DEPLOY_REPLICAS)}`, integer: true },
    { flags: '--sticky', description: 'Keep running tasks on their current version', field: 'are_tasks_sticky' },
    { flags: '--no-sticky', description: 'Move running tasks to the new version (the default)', field: 'are_tasks_sticky' },
    { flags: '--sdk-type <type>', description: 'Agent SDK kind', choices: SDK_TYPES, default: DEFAULT_SDK_TYPE },
    { flags: '--acp-type <type>', description: `Client-protocol server type (default: agentctl.json, else ${DEFAULT_ACP_TYPE})`, choices: ACP_TYPES },
    { flags: '--description <text>', description: 'Agent description (first deploy)' },
    { flags: '--allow-dirty', description: 'Deploy even with uncommitted changes (without --image: uploads the work tree as it is)' },
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
      throw usageError('The work tree has uncommitted changes', 'Commit them, or pass --allow-dirty to deploy anyway (the version is marked dirty).', agentctl('deploy', '--agent', agentName, ...(options.image ? ['--image', options.image] : []), ...(options.branch ? ['--branch', options.branch] : []), '--allow-dirty'));
    }
    const branch = options.branch ?? git.branch;
    if (!branch) throw usageError('HEAD is detached, so there is no branch to deploy to', 'Pass --branch <name>.');
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
        description: options.description ?? project?.description,
        source_filesystem_id: sourceFilesystemId ?? null,
      },
    });
    if (data.tasks_migrated) ctx.info(`${plural(data.tasks_migrated, 'running task')} moved to ${data.version_id}`);
    if (options.detach || isIn(SETTLED_VERSION_STATUSES, data.version_status)) {
      ctx.success(`${data.message} (${data.version_id}, ${data.version_status})`);
      if (options.detach) ctx.info(`Follow it with: ${agentctl('versions', 'get', data.version_id)} (it turns ACTIVE when its runtime reports ready: ${agentctl('versions', 'register', data.version_id)})`);
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
