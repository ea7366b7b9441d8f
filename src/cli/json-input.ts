import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { CommandContext } from './context.js';
import { usageError } from './errors.js';

/**
 * The value of every option that takes a JSON object (`--params`, `--data`): the JSON itself,
 * `@file.json` (a file, relative to the current directory), or `-` (standard input), as curl's
 * `--data @file` and gh's `--input -` read theirs.
 */
export async function readJsonObject(ctx: Pick<CommandContext, 'io' | 'readStdin'>, value: string, flag: string): Promise<Record<string, unknown>> {
  if (value === '-') return parseJsonObject(await ctx.readStdin(), `${flag} - (standard input)`);
  if (value.startsWith('@')) {
    const file = value.slice(1);
    if (!file) throw usageError(`${flag} @ names no file`, `Give the path after @, e.g. ${flag} @params.json.`);
    const text = await readFile(path.resolve(ctx.io.cwd, file), 'utf8').catch((error: NodeJS.ErrnoException) => {
      throw usageError(`Cannot read ${flag} ${value}: ${error.code === 'ENOENT' ? 'no such file' : (error.code ?? error.message)}`);
    });
    return parseJsonObject(text, `${flag} ${value}`);
  }
  return parseJsonObject(value, flag);
}

/** Parses a JSON object; anything else is a usage error naming where it came from. */
export function parseJsonObject(text: string, source: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw usageError(
      `${source} is not valid JSON: ${(error as Error).message}`,
      `Quote the object for your shell, e.g. '{"key":"value"}', or read it from a file with @file.json or from standard input with -.`,
    );
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw usageError(`${source} must be a JSON object ({...})`);
  return value as Record<string, unknown>;
}
