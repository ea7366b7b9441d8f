import type { Handler } from '../command.js';
import { call } from '../api.js';
import { usageError } from '../errors.js';
import { readGit } from '../git.js';
import { versionRecord } from '../output/resources.js';
import { record } from '../output/view.js';
import { parseAgentPath, requireAgentOption } from '../refs.js';
import { waitForVersion } from '../wait.js';

const deploy: Handler = async (ctx, _args, options) => {
  const agent = parseAgentPath(requireAgentOption(options.agent, 'agentctl deploy'));
  if (!options.image) throw usageError('Missing --image', 'Give the container image of this version (building images is not supported yet).', `agentctl deploy --agent ${options.agent} --image <registry/image:tag>`);
  const git = await readGit(ctx.io.cwd);
  if (git.dirty && !options.allowDirty) {
    throw usageError('The work tree has uncommitted changes', 'Commit them, or pass --allow-dirty to deploy anyway (the version is marked dirty).', `agentctl deploy --agent ${options.agent} --image ${options.image} --allow-dirty`);
  }
  const branch = options.branch ?? git.branch;
  if (!branch) throw usageError('HEAD is detached, so there is no branch to deploy to', 'Pass --branch <name>.');
  ctx.info(`Deploying ${git.hash.slice(0, 7)} "${git.subject}" of ${branch}${git.dirty ? ' (dirty)' : ''} as ${agent.namespace_slug}/${agent.agent_name}`);
  const { data, raw } = await call(ctx, 'deploy', {
    body: {
      namespace: agent.namespace_slug,
      agent_name: agent.agent_name,
      branch,
      git_hash: git.hash,
      git_message: git.subject,
      author_name: git.authorName,
      author_email: git.authorEmail,
      image_url: options.image,
      sdk_type: options.sdkType,
      acp_type: options.acpType,
      is_dirty: git.dirty,
      replicas: options.replicas,
      are_tasks_sticky: options.sticky,
      description: options.description,
    },
  });
  if (data.tasks_migrated) ctx.info(`${data.tasks_migrated} running task(s) moved to ${data.version_id}`);
  if (options.detach || data.version_status !== 'DEPLOYING') {
    ctx.success(`${data.message} (${data.version_id}, ${data.version_status})`);
    if (options.detach) ctx.info(`Follow it with: agentctl versions get ${data.version_id} (it turns ACTIVE when its runtime reports ready: agentctl versions register ${data.version_id})`);
    return {
      json: raw,
      view: record([
        ['Version', `v${data.version_number}`],
        ['ID', data.version_id],
        ['Status', data.version_status, 'status'],
        ['Agent', data.agent_id],
        ['Branch', data.branch_id],
        ['Tasks moved', data.tasks_migrated],
      ]),
    };
  }
  const settled = await waitForVersion(ctx, data.version_id, options.timeout, 'Deploy');
  return { json: settled.raw, view: versionRecord(settled.version) };
};
export default deploy;
