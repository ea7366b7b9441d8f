// The master key of agent secrets and the envelope around each value (README "Secrets"): a random
// data key per secret encrypts its value with AES-256-GCM; the master key wraps (AES-256-GCM) the
// data key. Only this module and the runtime's wiring ever hold plaintext, in memory.
import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { chmodSync, existsSync, readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';

/** Environment variable holding the master key: base64 of 32 random bytes. */
export const SECRETS_KEY_ENV = 'AGENTCTL_SECRETS_KEY';
/** The key file's name in the server's data directory (made at first start, mode 0600). */
export const SECRETS_KEY_FILE = 'secrets.key';

const KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** A master key that cannot be used: the server refuses to start with this message (no stack). */
export class MasterKeyError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'MasterKeyError';
  }
}

export class MasterKey {
  /** Names the key in rows and messages without revealing it: a digest of it, not the key. */
  readonly id: string;

  constructor(
    private readonly key: Buffer,
    /** Where it came from, for messages: `AGENTCTL_SECRETS_KEY`, the key file's path, or `memory`. */
    readonly origin: string,
  ) {
    if (key.length !== KEY_BYTES) throw new MasterKeyError(`The secrets master key must be ${KEY_BYTES} bytes; ${origin} holds ${key.length}`);
    this.id = `mk_${createHash('sha256').update('agentctl secrets master key\0').update(key).digest('hex').slice(0, 16)}`;
  }

  static generate(origin: string): MasterKey {
    return new MasterKey(randomBytes(KEY_BYTES), origin);
  }

  /** base64 of the key: what a key file or AGENTCTL_SECRETS_KEY holds. */
  encoded(): string {
    return this.key.toString('base64');
  }

  wrap(dataKey: Buffer, aad: string): string {
    return seal(this.key, dataKey, `data-key:${aad}`);
  }

  unwrap(wrapped: string, aad: string): Buffer {
    return open(this.key, wrapped, `data-key:${aad}`);
  }
}

/** The stored form of one secret value. */
export interface SealedValue {
  ciphertext: string;
  wrapped_key: string;
  key_id: string;
}

/** Encrypts `value` under a fresh data key, wrapped by `master`. `aad` binds it to its row (the secret's id). */
export function sealValue(master: MasterKey, aad: string, value: string): SealedValue {
  const dataKey = randomBytes(KEY_BYTES);
  try {
    return { ciphertext: seal(dataKey, Buffer.from(value, 'utf8'), `value:${aad}`), wrapped_key: master.wrap(dataKey, aad), key_id: master.id };
  } finally {
    dataKey.fill(0);
  }
}

export function openValue(master: MasterKey, aad: string, sealed: SealedValue): string {
  if (sealed.key_id !== master.id) throw new MasterKeyError(`Secret ${aad} was sealed with master key ${sealed.key_id}, not ${master.id}`);
  const dataKey = master.unwrap(sealed.wrapped_key, aad);
  try {
    return open(dataKey, sealed.ciphertext, `value:${aad}`).toString('utf8');
  } finally {
    dataKey.fill(0);
  }
}

/** The data key of a sealed value, wrapped by `to` instead of `from`; the value's ciphertext is untouched. */
export function rewrap(from: MasterKey, to: MasterKey, aad: string, wrappedKey: string): string {
  const dataKey = from.unwrap(wrappedKey, aad);
  try {
    return to.wrap(dataKey, aad);
  } finally {
    dataKey.fill(0);
  }
}

function seal(key: Buffer, plaintext: Buffer, aad: string): string {
  const iv = randomBytes(IV_BYTES);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  cipher.setAAD(Buffer.from(aad, 'utf8'));
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()]);
  return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64');
}

function open(key: Buffer, sealed: string, aad: string): Buffer {
  const bytes = Buffer.from(sealed, 'base64');
  const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(0, IV_BYTES));
  decipher.setAAD(Buffer.from(aad, 'utf8'));
  decipher.setAuthTag(bytes.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
  return Buffer.concat([decipher.update(bytes.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]);
}

/** A base64 master key (AGENTCTL_SECRETS_KEY, a key file); anything but 32 bytes is refused. */
export function parseMasterKey(text: string, origin: string): MasterKey {
  const trimmed = text.trim();
  if (!/^[A-Za-z0-9+/]+={0,2}$/.test(trimmed)) {
    throw new MasterKeyError(`${origin} is not base64: it must hold 32 random bytes in base64 (make one with: openssl rand -base64 32)`);
  }
  const key = Buffer.from(trimmed, 'base64');
  if (key.length !== KEY_BYTES) {
    throw new MasterKeyError(`${origin} holds ${key.length} bytes: it must hold 32 random bytes in base64 (make one with: openssl rand -base64 32)`);
  }
  return new MasterKey(key, origin);
}

export function readKeyFile(file: string): MasterKey {
  // Readable by others: made private, as the CLI does with its config.
  if ((statSync(file).mode & 0o077) !== 0) chmodSync(file, 0o600);
  return parseMasterKey(readFileSync(file, 'utf8'), file);
}

/** Writes a key file with mode 0600; `exclusive`: fails when it exists. */
export function writeKeyFile(file: string, key: MasterKey, exclusive: boolean): void {
  writeFileSync(file, `${key.encoded()}\n`, { mode: 0o600, flag: exclusive ? 'wx' : 'w' });
  chmodSync(file, 0o600);
}

/** Where a rotation writes the new key before the database is re-wrapped (renamed over the key file after). */
export const pendingKeyFile = (file: string) => `${file}.new`;

export interface KeySources {
  /** AGENTCTL_SECRETS_KEY's value, when set. */
  envKey?: string;
  /** The key file (`<data dir>/secrets.key`); absent when the server has no data directory. */
  file?: string;
}

/**
 * The master key a server starts with, given what the database holds (the master key ids of its
 * secret rows): AGENTCTL_SECRETS_KEY, else the key file (made with mode 0600 when there is none and
 * no secret exists yet), else, with no data directory, a key for this process only. A key that
 * cannot open the stored secrets is refused with a sentence that says what to do.
 */
export function chooseMasterKey(sources: KeySources, storedKeyIds: readonly string[]): MasterKey {
  const hasSecrets = storedKeyIds.length > 0;
  let key: MasterKey;
  if (sources.envKey !== undefined && sources.envKey !== '') {
    key = parseMasterKey(sources.envKey, SECRETS_KEY_ENV);
  } else if (sources.file) {
    const pending = pendingKeyFile(sources.file);
    if (existsSync(pending)) {
      // A rotation stopped between re-wrapping and renaming: the rows say which key is current.
      const next = readKeyFile(pending);
      if (hasSecrets && storedKeyIds.every((id) => id === next.id)) renameSync(pending, sources.file);
    }
    if (existsSync(sources.file)) key = readKeyFile(sources.file);
    else if (hasSecrets) {
      throw new MasterKeyError(
        `The database holds agent secrets but there is no master key: set ${SECRETS_KEY_ENV} or restore ${sources.file} (the key they were sealed with). The server does not start agents without their secrets.`,
      );
    } else {
      key = MasterKey.generate(sources.file);
      writeKeyFile(sources.file, key, true);
    }
  } else if (hasSecrets) {
    throw new MasterKeyError(
      `The database holds agent secrets but there is no master key: set ${SECRETS_KEY_ENV} to the key they were sealed with. The server does not start agents without their secrets.`,
    );
  } else {
    key = MasterKey.generate('memory');
  }
  const foreign = storedKeyIds.find((id) => id !== key.id);
  if (foreign) {
    throw new MasterKeyError(
      `The agent secrets in the database were sealed with master key ${foreign}, but ${key.origin} holds ${key.id}: start the server with the key they were sealed with.`,
    );
  }
  return key;
}
