import type { BlobStore } from '../blobs/index.js';
import { extractFilesystem } from '../domain/filesystems.js';
import { issueRegistrationToken, signingSecretFor } from '../domain/registration.js';
import type { Store } from '../store/db.js';
import type { VersionSpec } from './driver.js';
import type { RuntimeSecretSource } from './reconciler.js';

/** Tokens and secrets from the registration domain (tokens one-time and stored hashed; one signing secret per version). */
export function registrationSecrets(store: Store): RuntimeSecretSource {
  return {
    signingSecret: (versionId) => signingSecretFor(store.db, versionId),
    registrationToken: (versionId, options) => issueRegistrationToken(store.db, versionId, { reusable: options?.reusable }),
  };
}

/** The local driver's source: the version's source filesystem (`local://fs_...`), extracted. */
export function sourceFromFilesystem(store: Store, blobs: BlobStore): (spec: VersionSpec, dir: string) => Promise<void> {
  return async (spec, dir) => {
    const fsId = spec.sourceFilesystemId ?? spec.imageUrl.replace(/^local:\/\//, '');
    await extractFilesystem(store.db, blobs, fsId, dir);
  };
}
