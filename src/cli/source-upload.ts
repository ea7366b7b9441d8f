// `agentctl deploy` without --image: the agent's source goes up as a filesystem of its namespace,
// and the version runs from it (image_url local://<fs id>).
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { execa } from 'execa';
import { AGENT_PROJECT_FILE, AgentProjectFile } from '../contract/agent-project.js';
import type { CommandContext } from './context.js';
import { usageError } from './errors.js';
import { runSync, syncTransport } from './commands/fs/shared.js';

/** `agentctl.json` of the repository (at `root`), or undefined when there is none. */
export async function readAgentProject(root: string): Promise<AgentProjectFile | undefined> {
  let text: string;
  try {
    text = await readFile(path.join(root, AGENT_PROJECT_FILE), 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw usageError(`${AGENT_PROJECT_FILE} is not valid JSON: ${(error as Error).message}`);
  }
  const parsed = AgentProjectFile.safeParse(json);
  if (!parsed.success)
    throw usageError(`${AGENT_PROJECT_FILE} is invalid: ${parsed.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ')}`);
  return parsed.data;
}

export const gitRoot = async (cwd: string) => (await execa('git', ['rev-parse', '--show-toplevel'], { cwd, stripFinalNewline: true })).stdout;

/**
 * Uploads the commit's tree (`git archive HEAD`), or the work tree as it is when `workTree`, into a
 * new filesystem of `namespace`; returns its id.
 */
export async function uploadSource(ctx: CommandContext, root: string, namespace: string, workTree: boolean): Promise<string> {
  const { data: fs } = await ctx.call('createFilesystem', { body: { namespace } });
  const transport = syncTransport(ctx);
  const { syncUp } = await import('../sync/index.js');
  const scratch = await mkdtemp(path.join(os.tmpdir(), 'agentctl-source-'));
  try {
    let dir = root;
    if (!workTree) {
      dir = path.join(scratch, 'tree');
      const { extract } = await import('tar');
      const { mkdir } = await import('node:fs/promises');
      await mkdir(dir);
      const git = execa('git', ['archive', '--format=tar', 'HEAD'], { cwd: root, buffer: false, stripFinalNewline: false });
      await Promise.all([pipeline(git.stdout!, extract({ cwd: dir })), git]);
    }
    const stateFile = path.join(scratch, 'sync-state.json');
    const result = await runSync(ctx, { fsId: fs.id, dir, verb: 'push' }, (onProgress) =>
      syncUp(transport, fs.id, dir, { onProgress, stateFile, signal: ctx.signal }),
    );
    ctx.info(`Uploaded the ${workTree ? 'work tree' : 'commit’s tree'} as ${fs.id} (${result.added} files, checksum ${result.checksum.slice(0, 12)})`);
    return fs.id;
  } finally {
    await rm(scratch, { recursive: true, force: true });
  }
}
