/** Matches an agentctl key secret anywhere in a string. */
const SECRET_PATTERN = /agk_[0-9A-Za-z]+/g;

/** Hides key secrets in a string: `agk_...` becomes `agk_[redacted]`. */
export function redactText(text: string): string {
  return text.replace(SECRET_PATTERN, 'agk_[redacted]');
}

/** A copy of a JSON value with `key` fields and every agk_ string hidden, for debug traces. */
export function redactJson(value: unknown): unknown {
  if (typeof value === 'string') return redactText(value);
  if (Array.isArray(value)) return value.map(redactJson);
  if (value && typeof value === 'object') {
    return Object.fromEntries(
      Object.entries(value).map(([name, field]) => [name, name === 'key' && typeof field === 'string' ? '[redacted]' : redactJson(field)]),
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
