import { execa } from 'execa';
import { usageError } from './errors.js';

export interface GitCommit {
  hash: string;
  branch: string | null;
  subject: string;
  authorName: string;
  authorEmail: string;
  dirty: boolean;
}

/** Reads the checked-out commit of the work tree at `cwd` (branch null when HEAD is detached). */
export async function readGit(cwd: string): Promise<GitCommit> {
  const git = (args: string[]) => execa('git', args, { cwd, stripFinalNewline: true });
  try {
    await git(['rev-parse', '--is-inside-work-tree']);
  } catch (error) {
    const missing = (error as { code?: string }).code === 'ENOENT';
    throw usageError(
      missing ? 'deploy reads git, but git is not installed' : `deploy reads the commit to deploy from git, but ${cwd} is not inside a git work tree`,
      'Run it in the agent’s repository.',
    );
  }
  let log: string;
  try {
    log = (await git(['log', '-1', '--format=%H%x00%s%x00%an%x00%ae'])).stdout;
  } catch {
    throw usageError('The repository has no commit yet', 'Commit the agent first: git commit -m "first version".');
  }
  const [hash, subject, authorName, authorEmail] = log.split('\0');
  const head = (await git(['rev-parse', '--abbrev-ref', 'HEAD'])).stdout;
  const status = (await git(['status', '--porcelain'])).stdout;
  return { hash, branch: head === 'HEAD' ? null : head, subject, authorName, authorEmail, dirty: status.trim() !== '' };
}

/** The branch checked out in the work tree at `cwd`; null outside git, on a detached HEAD, or without git. */
export async function currentGitBranch(cwd: string): Promise<string | null> {
  try {
    const head = (await execa('git', ['rev-parse', '--abbrev-ref', 'HEAD'], { cwd, stripFinalNewline: true })).stdout;
    return head && head !== 'HEAD' ? head : null;
  } catch {
    return null;
  }
}
