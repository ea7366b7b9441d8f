import { createHash, randomBytes } from 'node:crypto';
import { crc32 } from 'node:zlib';

const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
export const KEY_PREFIX = 'agk_';
const BODY_LENGTH = 43; // 62^43 > 2^256
const CHECKSUM_LENGTH = 6;
const KEY_PATTERN = /^agk_[0-9A-Za-z]{49}$/;

function base62(value: bigint, length: number): string {
  let out = '';
  for (let i = 0; i < length; i++) {
    out = ALPHABET[Number(value % 62n)] + out;
    value /= 62n;
  }
  return out;
}

const checksum = (body: string) => base62(BigInt(crc32(body)), CHECKSUM_LENGTH);

/** A new secret: `agk_` + 43 base62 characters (256 random bits) + a 6-character CRC32 checksum. */
export function generateSecret(): string {
  const body = base62(BigInt(`0x${randomBytes(32).toString('hex')}`), BODY_LENGTH);
  return KEY_PREFIX + body + checksum(body);
}

/** Format and checksum only: lets a mistyped or truncated key be refused without a database lookup. */
export function isWellFormedSecret(secret: string): boolean {
  if (!KEY_PATTERN.test(secret)) return false;
  const body = secret.slice(KEY_PREFIX.length, KEY_PREFIX.length + BODY_LENGTH);
  return secret.slice(KEY_PREFIX.length + BODY_LENGTH) === checksum(body);
}

export const hashSecret = (secret: string) => createHash('sha256').update(secret).digest('hex');
export const secretPrefix = (secret: string) => secret.slice(0, 12);
