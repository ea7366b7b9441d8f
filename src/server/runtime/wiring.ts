import type { BlobStore } from '../blobs/index.js';
import { extractFilesystem } from '../domain/filesystems.js';
import { issueRegistrationToken, signingSecretFor } from '../domain/registration.js';
import type { Store } from '../store/db.js';
import type { VersionSpec } from './driver.js';
import type { RuntimeSecretSource } from './reconciler.js';
import { secretDigests, versionSecretEnv } from '../domain/secrets.js';
import type { MasterKey } from '../secrets/keyring.js';

/**
 * Tokens and secrets from the registration domain (tokens one-time and stored hashed; one signing
 * secret per version), and the agent's own secrets, opened with the master key here, in memory.
 */
export function registrationSecrets(store: Store, secretsKey: MasterKey): RuntimeSecretSource {
  return {
    signingSecret: (versionId) => signingSecretFor(store.db, versionId),
    registrationToken: (versionId, options) => issueRegistrationToken(store.db, versionId, { reusable: options?.reusable }),
    agentSecrets: (versionId) => versionSecretEnv(store.db, secretsKey, versionId),
    agentSecretDigests: (versionIds) => secretDigests(store.db, versionIds),
  };
}

/** The local driver's source: the version's source filesystem (`local://fs_...`), extracted. */
export function sourceFromFilesystem(store: Store, blobs: BlobStore): (spec: VersionSpec, dir: string) => Promise<void> {
  return async (spec, dir) => {
    const fsId = spec.sourceFilesystemId ?? spec.imageUrl.replace(/^local:\/\//, '');
    await extractFilesystem(store.db, blobs, fsId, dir);
  };
}
