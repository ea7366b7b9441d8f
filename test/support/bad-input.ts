import { expect } from 'vitest';
import type { ApiResponse } from './service.js';

/** A body cut off mid-object. */
export const MALFORMED_JSON = '{"a":';

/** A well-formed JSON body just over the 1 MiB request limit. */
export const OVERSIZE_BODY = JSON.stringify({ state: { blob: 'x'.repeat(1024 * 1024) } });

/** Asserts the spec's 422 body with exactly one item at `loc` (and its type, when given). */
export function expectInvalid(res: ApiResponse, loc: (string | number)[], type?: string): void {
  expect(res.status, JSON.stringify(res.body)).toBe(422);
  expect(Object.keys(res.body)).toEqual(['detail']);
  expect(res.body.detail.map((d: { loc: unknown }) => d.loc)).toEqual([loc]);
  expect(typeof res.body.detail[0].msg).toBe('string');
  if (type) expect(res.body.detail[0].type).toBe(type);
}

/** Asserts the malformed-JSON 422: one item at `["body"]`, type `json_invalid`. */
export const expectMalformed = (res: ApiResponse) => expectInvalid(res, ['body'], 'json_invalid');

/** Asserts `{detail, code}` with `status`, the detail a non-empty sentence. */
export function expectError(res: ApiResponse, status: number, code: string, detail?: string): void {
  expect(res.status, JSON.stringify(res.body)).toBe(status);
  expect(Object.keys(res.body).sort()).toEqual(['code', 'detail']);
  expect(res.body.code).toBe(code);
  if (detail !== undefined) expect(res.body.detail).toBe(detail);
  else expect(res.body.detail.length).toBeGreaterThan(0);
}

export const expectOversize = (res: ApiResponse) => expectError(res, 413, 'payload_too_large');
