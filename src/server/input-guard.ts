import type { ValidationItem } from './domain/errors.js';

/**
 * How deep JSON may nest inside any request field. Deep enough for any real document; shallow
 * enough that no recursive walk (ours, zod's, JSON.stringify's, PostgreSQL's) can overflow a stack.
 */
export const MAX_JSON_DEPTH = 64;
/** The longest path parameter: the longest name (a task's, 255 characters). */
export const MAX_PATH_PARAM_CHARS = 255;
/**
 * The longest path parameter the router accepts (bytes as sent, percent-encoded). Above every
 * name limit (255 characters, even fully percent-encoded), so a valid name is always reachable and
 * the schema's own limit answers 422; beyond it the router answers 414.
 */
export const MAX_PATH_PARAM_BYTES = MAX_PATH_PARAM_CHARS * 12;
/** The largest JSON request body (archive uploads stream and check their own limits). */
export const BODY_LIMIT_BYTES = 1024 * 1024;

type Loc = (string | number)[];

/** With the `u` flag a surrogate pair is one code point, so this matches lone surrogates only. */
const LONE_SURROGATE = /\p{Cs}/u;
const LONE_SURROGATES = /\p{Cs}/gu;

/** A key shown in `loc` without the characters that made it unsafe. */
const printable = (key: string) => key.replace(LONE_SURROGATES, '\uFFFD').replaceAll('\0', '\\u0000');

/**
 * Checks what the schemas cannot express, once for every endpoint (including ones added later):
 * no NUL characters (PostgreSQL text cannot hold them), only well-formed Unicode (a lone surrogate
 * cannot be encoded as UTF-8), nesting at most MAX_JSON_DEPTH levels, in keys and values alike.
 * Query values must not be empty: `?agent=` is a mistake, not "no filter".
 */
export function unsafeInputItems(where: 'path' | 'query' | 'body', value: unknown): ValidationItem[] {
  const items: ValidationItem[] = [];
  const checkString = (text: string, loc: Loc, what: string) => {
    if (text.includes('\0')) items.push({ loc, msg: `${what} must not contain NUL (\\u0000) characters`, type: 'string_nul' });
    else if (LONE_SURROGATE.test(text)) items.push({ loc, msg: `${what} must be well-formed Unicode (no lone surrogates)`, type: 'string_unicode' });
  };
  // Iterative, so a hostile depth cannot overflow the stack before it is refused.
  const stack: { value: unknown; loc: Loc; depth: number }[] = [{ value, loc: [where], depth: 0 }];
  while (stack.length > 0 && items.length < 20) {
    const { value: v, loc, depth } = stack.pop()!;
    if (typeof v === 'string') {
      checkString(v, loc, 'Text');
      if (where === 'query' && v === '' && loc.length === 2)
        items.push({ loc, msg: 'Must not be empty: leave the parameter out instead', type: 'string_too_short' });
      if (where === 'path' && v.length > MAX_PATH_PARAM_CHARS)
        items.push({ loc, msg: `Too long: at most ${MAX_PATH_PARAM_CHARS} characters`, type: 'too_big' });
      continue;
    }
    if (v === null || typeof v !== 'object') continue;
    if (depth >= MAX_JSON_DEPTH) {
      items.push({ loc, msg: `Nested deeper than ${MAX_JSON_DEPTH} levels`, type: 'too_deep' });
      continue;
    }
    if (Array.isArray(v)) {
      for (let i = v.length - 1; i >= 0; i--) stack.push({ value: v[i], loc: [...loc, i], depth: depth + 1 });
      continue;
    }
    // Buffers and streams (binary bodies) are not JSON: their routes check them.
    if (ArrayBuffer.isView(v) || typeof (v as { pipe?: unknown }).pipe === 'function') continue;
    const entries = Object.entries(v);
    for (let i = entries.length - 1; i >= 0; i--) {
      const [key, child] = entries[i];
      const childLoc = [...loc, printable(key)];
      const before = items.length;
      checkString(key, childLoc, 'Key');
      if (items.length === before) stack.push({ value: child, loc: childLoc, depth: depth + 1 });
    }
  }
  return items;
}
