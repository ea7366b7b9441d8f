// `agentctl server secrets-rotate-key`: every secret's data key re-wrapped under a new master key,
// in one transaction; the values' ciphertexts are not touched. Run with the server stopped.
import { renameSync, rmSync } from 'node:fs';
import type { Db } from '../store/db.js';
import { rewrapSecrets, storedMasterKeyIds } from '../domain/secrets.js';
import { chooseMasterKey, MasterKey, MasterKeyError, pendingKeyFile, SECRETS_KEY_ENV, writeKeyFile, type KeySources } from './keyring.js';

export interface RotationResult {
  /** Secrets whose data key was re-wrapped. */
  rewrapped: number;
  previous_key_id: string;
  key_id: string;
  /** The key file now holding the new key; null when the key comes from AGENTCTL_SECRETS_KEY (set it to the new key). */
  key_file: string | null;
}

/**
 * With a key file: the new key is written beside it first (`secrets.key.new`, mode 0600), the rows
 * are re-wrapped, then it replaces the key file; a start after an interruption between the two finds
 * which key the rows need (keyring.ts). With AGENTCTL_SECRETS_KEY: the new key must be given
 * (`newKey`), and the operator sets the variable to it before the next start.
 */
export async function rotateSecretsKey(db: Db, sources: KeySources, newKey?: MasterKey): Promise<RotationResult> {
  const current = chooseMasterKey(sources, await storedMasterKeyIds(db));
  const fromEnv = sources.envKey !== undefined && sources.envKey !== '';
  if (fromEnv && !newKey) {
    throw new MasterKeyError(
      `The master key comes from ${SECRETS_KEY_ENV}: give the new one on standard input (--new-key-stdin), then set ${SECRETS_KEY_ENV} to it`,
    );
  }
  const next = newKey ?? MasterKey.generate(sources.file ?? 'memory');
  if (next.id === current.id) throw new MasterKeyError('The new master key is the current one: give another (openssl rand -base64 32)');
  const file = fromEnv ? undefined : sources.file;
  if (!fromEnv && !file)
    throw new MasterKeyError(`This server keeps no key file (no data directory): set ${SECRETS_KEY_ENV} and give the new key with --new-key-stdin`);
  if (file) writeKeyFile(pendingKeyFile(file), next, false);
  let rewrapped: number;
  try {
    rewrapped = await rewrapSecrets(db, current, next);
  } catch (error) {
    if (file) rmSync(pendingKeyFile(file), { force: true });
    throw error;
  }
  if (file) renameSync(pendingKeyFile(file), file);
  return { rewrapped, previous_key_id: current.id, key_id: next.id, key_file: file ?? null };
}
