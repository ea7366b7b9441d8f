/** Matches an agentctl key secret anywhere in a string. */
const SECRET_PATTERN = /agk_[0-9A-Za-z]+/g;
/** Matches a registration token (`agrt_` + base64url). */
const TOKEN_PATTERN = /agrt_[0-9A-Za-z_-]+/g;
/** Fields whose string value is a secret: a new key's secret, runtime keys, registration tokens, signing secrets. */
const SECRET_FIELDS = new Set(['secret', 'key', 'agent_api_key', 'registration_token', 'signing_secret']);

/** Hides key secrets and registration tokens in a string: `agk_...` becomes `agk_[redacted]`. */
export function redactText(text: string): string {
  return text.replace(SECRET_PATTERN, 'agk_[redacted]').replace(TOKEN_PATTERN, 'agrt_[redacted]');
}

/**
 * A copy of a JSON value with secret fields and every agk_/agrt_ string hidden, for debug traces.
 * `topLevel`: fields of this body that are secret values whatever their name (an endpoint's `redact`).
 */
export function redactJson(value: unknown, topLevel: readonly string[] = []): unknown {
  if (typeof value === 'string') return redactText(value);
  if (Array.isArray(value)) return value.map((item) => redactJson(item));
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([name, field]) => [
        name,
        topLevel.includes(name) || (SECRET_FIELDS.has(name) && typeof field === 'string') ? '[redacted]' : redactJson(field),
      ]),
    );
  }
  return value;
}

/** Header values safe to print: the Authorization header keeps its scheme only. */
export function redactHeaders(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(headers).map(([name, value]) => [name, name.toLowerCase() === 'authorization' ? value.replace(/\s.*$/, ' [redacted]') : redactText(value)]),
  );
}
