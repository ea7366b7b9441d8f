import type { Client } from '../../../client/index.js';
import { CliError } from '../../errors.js';
import { ExitCode } from '../../exit-codes.js';
import { LIST_MAX } from '../../names.js';

/** Sharing groups by `grp_` id or by name (names are unique in an org); one list call when a name is given. */
export async function resolveGroupIds(client: Client, refs: string[], flag: string): Promise<string[]> {
  const { groups } = refs.some((ref) => !ref.startsWith('grp_')) ? await client.listGroups({ query: { limit: LIST_MAX } }) : { groups: [] };
  return refs.map((ref) => {
    if (ref.startsWith('grp_')) return ref;
    const found = groups.find((g) => g.name === ref);
    if (!found)
      throw new CliError(`${flag} ${ref}: no sharing group of that name`, { exitCode: ExitCode.notFound, code: 'not_found', next: 'agentctl groups list' });
    return found.id;
  });
}

/** An API key by `key_` id or by name: a name must name exactly one live key. */
export async function resolveKeyId(client: Client, ref: string, what: string): Promise<string> {
  if (ref.startsWith('key_')) return ref;
  const { api_keys } = await client.listKeys();
  const found = api_keys.filter((k) => k.name === ref);
  if (found.length === 1) return found[0].id;
  if (found.length === 0)
    throw new CliError(`${what} ${ref}: no API key of that name`, { exitCode: ExitCode.notFound, code: 'not_found', next: 'agentctl keys list' });
  throw new CliError(`${what} ${ref}: ${found.length} keys have that name (${found.map((k) => k.id).join(', ')})`, {
    exitCode: ExitCode.usage,
    code: 'ambiguous_key',
    hint: 'Name the key by its key_ id.',
  });
}
