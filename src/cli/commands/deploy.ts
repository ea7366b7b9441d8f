import { isIn, SETTLED_VERSION_STATUSES } from '../../contract/lifecycle.js';
import type { Handler } from '../command.js';
import { call } from '../api.js';
import { usageError } from '../errors.js';
import { readGit } from '../git.js';
import { versionRecord } from '../output/resources.js';
import { record } from '../output/view.js';
import { parseAgentPath, requireAgentOption } from '../refs.js';
import { waitForVersion } from '../wait.js';
import { DEFAULT_ACP_TYPE } from '../../contract/enums.js';
import { gitRoot, readAgentProject, uploadSource } from '../source-upload.js';
import { agentctl } from '../shell.js';

const deploy: Handler = async (ctx, _args, options) => {
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
  const { data, raw } = await call(ctx, 'deploy', {
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
  if (data.tasks_migrated) ctx.info(`${data.tasks_migrated} running task(s) moved to ${data.version_id}`);
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
};
export default deploy;
