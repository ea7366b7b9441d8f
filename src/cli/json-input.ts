import { usageError } from './errors.js';

/** Parses a JSON object given on the command line (or in a file); anything else is a usage error naming the flag. */
export function parseJsonObject(text: string, flag: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    throw usageError(`${flag} is not valid JSON: ${(error as Error).message}`, `Quote the object for your shell, e.g. ${flag} '{"key":"value"}'.`);
  }
  if (!value || typeof value !== 'object' || Array.isArray(value)) throw usageError(`${flag} must be a JSON object ({...})`);
  return value as Record<string, unknown>;
}
