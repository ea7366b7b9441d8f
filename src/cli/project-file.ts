import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { AGENT_PROJECT_FILE, type AgentProjectFile } from '../contract/agent-project.js';
import { usageError } from './errors.js';

/**
 * The directory's `agentctl.json` (written by `agentctl init`), read in this one place: every
 * command with an `--agent` option takes its default from `agent` (like `vercel link` or
 * `fly.toml`), and `deploy` its other defaults. Undefined when the directory has none; a usage
 * error naming the file when it is not valid.
 */
export async function readProjectFile(cwd: string): Promise<AgentProjectFile | undefined> {
  const file = path.join(cwd, AGENT_PROJECT_FILE);
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw usageError(`Cannot read ${file}: ${(error as Error).message}`);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw usageError(`${file} is not valid JSON: ${(error as Error).message}`, `Fix the file, or pass --agent namespace/name.`);
  }
  // zod only when a file exists: commands run outside an agent's directory never load it here.
  const { AgentProjectFile } = await import('../contract/agent-project.js');
  const parsed = AgentProjectFile.safeParse(json);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((issue) => `${issue.path.join('.') || '(file)'}: ${issue.message}`).join('; ');
    throw usageError(`${file} is not a valid ${AGENT_PROJECT_FILE}: ${problems}`, 'Fix the file, or pass --agent namespace/name.');
  }
  return parsed.data;
}

/** The default `--agent` of the directory: `agent` of its `agentctl.json`, when it has one. */
export async function projectAgent(cwd: string): Promise<string | undefined> {
  return (await readProjectFile(cwd))?.agent;
}
