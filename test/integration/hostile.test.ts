import { describe, expect, test } from 'vitest';
import { z } from 'zod';
import { endpoints, type Endpoint } from '../../src/contract/endpoints.js';
import { RESPONSE_STATUSES, UNPROCESSABLE_CODES, VALIDATION_LOC_ROOTS } from '../../src/contract/common.js';
import { generateSecret } from '../../src/server/auth/secrets.js';
import { engines, useService } from '../support/service.js';

/**
 * The hostile client of issue 8, driven by the endpoint table: every endpoint the server serves,
 * including ones added after this file, gets NUL bytes and lone surrogates in every path
 * parameter, query value and top-level body field, deep nesting in every body field, bad
 * percent-encoding and overlong path parameters, malformed JSON, the wrong media type, and missing
 * or unknown keys with bodies. Every answer must be below 500 and in a documented shape.
 */

type Case = {
  what: string;
  method: string;
  path: string;
  key: string | null;
  rawBody?: string;
  headers?: Record<string, string>;
  expect?: (status: number, body: any) => void;
};

const SAMPLE_ID = 'zz_hostile_0';
const nested = (depth: number) => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;

/** The path with every parameter set to `value` except `only` (when given), set to `special`. */
function fillPath(e: Endpoint, special?: { name: string; value: string }): string {
  return e.path.replace(/:([a-z_]+)/g, (_, name: string) => (special && special.name === name ? special.value : SAMPLE_ID));
}

/** A value no typed parameter takes; plain-text ones accept it, so they are left out of that case. */
const WORD = 'not-a-value';
const refuses = (schema: unknown, value: unknown) => !(schema as z.ZodType).safeParse(value).success;
const pathParams = (e: Endpoint) => [...e.path.matchAll(/:([a-z_]+)/g)].map((m) => m[1]);
const queryNames = (e: Endpoint) => (e.query ? Object.keys(e.query.shape) : []);
const bodyFields = (e: Endpoint) => (e.body instanceof z.ZodObject ? Object.keys(e.body.shape) : []);
const hasJsonBody = (e: Endpoint) => e.body !== undefined && !e.binary?.request;

function casesFor(e: Endpoint, adminKey: string): Case[] {
  const cases: Case[] = [];
  const base = fillPath(e);
  const add = (c: Omit<Case, 'method'>) => cases.push({ method: e.method, ...c });
  const bodyMethod = e.method !== 'GET';
  const json = (value: unknown) => JSON.stringify(value);
  const expectInvalidAt = (loc: (string | number)[]) => (status: number, body: any) => {
    expect(status, JSON.stringify(body)).toBe(422);
    expect(body.detail.map((d: { loc: unknown }) => d.loc)).toContainEqual(loc);
  };
  const expectStatus = (wanted: number, code?: string) => (status: number, body: any) => {
    expect(status, JSON.stringify(body)).toBe(wanted);
    if (code) expect(body.code).toBe(code);
  };

  // Keys: missing and unknown, each with a body the server must not read first.
  if (e.auth === true || e.auth === undefined) {
    const body = bodyMethod ? { rawBody: hasJsonBody(e) ? '{"a":' : 'x'.repeat(4096) } : {};
    add({ what: 'no key, malformed body', path: base, key: null, ...body, expect: expectStatus(401, 'unauthorized') });
    add({ what: 'unknown key, malformed body', path: base, key: generateSecret(), ...body, expect: expectStatus(401, 'unauthorized') });
    add({ what: 'garbage key', path: base, key: 'not-a-key', ...body, expect: expectStatus(401, 'unauthorized') });
  }

  // Path parameters.
  for (const name of pathParams(e)) {
    add({ what: `NUL in path.${name}`, path: fillPath(e, { name, value: 'a%00b' }), key: adminKey, expect: expectInvalidAt(['path', name]) });
    add({ what: `bad percent-encoding in path.${name}`, path: fillPath(e, { name, value: '%ff' }), key: adminKey, expect: expectStatus(400, 'bad_url') });
    add({
      what: `encoded lone surrogate in path.${name}`,
      path: fillPath(e, { name, value: '%ED%A0%80' }),
      key: adminKey,
      expect: expectStatus(400, 'bad_url'),
    });
    add({
      what: `256 characters in path.${name}`,
      path: fillPath(e, { name, value: 'n'.repeat(256) }),
      key: adminKey,
      expect: expectInvalidAt(['path', name]),
    });
    add({
      what: `4,000 characters in path.${name}`,
      path: fillPath(e, { name, value: 'n'.repeat(4000) }),
      key: adminKey,
      expect: expectStatus(414, 'uri_too_long'),
    });
  }

  // Headers the route flags imply, with values they refuse (a header's loc starts with `header`).
  if (e.sse)
    add({
      what: 'a word as Last-Event-ID',
      path: base,
      key: adminKey,
      headers: { 'last-event-id': WORD },
      expect: expectInvalidAt(['header', 'last-event-id']),
    });
  if (e.idempotencyKey)
    add({ what: 'a 256-character Idempotency-Key', path: base, key: adminKey, rawBody: '{}', headers: { 'idempotency-key': 'k'.repeat(256) } });

  // Query values: the declared ones, and one the endpoint does not know.
  for (const name of [...queryNames(e), 'unknown_param']) {
    add({ what: `NUL in query.${name}`, path: `${base}?${name}=a%00b`, key: adminKey, expect: expectInvalidAt(['query', name]) });
    add({ what: `empty query.${name}`, path: `${base}?${name}=`, key: adminKey, expect: expectInvalidAt(['query', name]) });
    add({ what: `encoded lone surrogate in query.${name}`, path: `${base}?${name}=%ED%A0%80`, key: adminKey });
    add({ what: `hex number in query.${name}`, path: `${base}?${name}=0x10`, key: adminKey });
    add({ what: `query.${name} repeated`, path: `${base}?${name}=a&${name}=b`, key: adminKey });
  }
  // A word where a typed value goes (a number, boolean, enum, date): 422 at that parameter, for every
  // parameter whose schema refuses it, including ones added after this file.
  for (const name of queryNames(e)) {
    if (!refuses(e.query!.shape[name], WORD)) continue;
    add({ what: `a word in typed query.${name}`, path: `${base}?${name}=${WORD}`, key: adminKey, expect: expectInvalidAt(['query', name]) });
  }

  // JSON bodies.
  if (hasJsonBody(e)) {
    add({ what: 'malformed JSON', path: base, key: adminKey, rawBody: '{"a":', expect: expectInvalidAt(['body']) });
    add({
      what: 'text/plain',
      path: base,
      key: adminKey,
      rawBody: 'hello',
      headers: { 'content-type': 'text/plain' },
      expect: expectStatus(415, 'unsupported_media_type'),
    });
    add({
      what: 'utf-16 charset',
      path: base,
      key: adminKey,
      rawBody: '{}',
      headers: { 'content-type': 'application/json; charset=utf-16le' },
      expect: expectStatus(415, 'unsupported_media_type'),
    });
    add({
      what: 'gzip encoding',
      path: base,
      key: adminKey,
      rawBody: '{}',
      headers: { 'content-encoding': 'gzip' },
      expect: expectStatus(415, 'unsupported_media_type'),
    });
    add({ what: 'an array body', path: base, key: adminKey, rawBody: '[]' });
    add({ what: 'an empty object', path: base, key: adminKey, rawBody: '{}' });
    add({ what: 'null', path: base, key: adminKey, rawBody: 'null' });
    add({
      what: 'a body over 1 MiB',
      path: base,
      key: adminKey,
      rawBody: json({ a: 'x'.repeat(1024 * 1024) }),
      expect: expectStatus(413, 'payload_too_large'),
    });
    add({ what: '5,000 levels of nesting as the body', path: base, key: adminKey, rawBody: nested(5000), expect: (status) => expect(status).toBe(422) });
    for (const field of bodyFields(e)) {
      add({ what: `NUL in body.${field}`, path: base, key: adminKey, rawBody: json({ [field]: 'x\u0000y' }), expect: expectInvalidAt(['body', field]) });
      add({ what: `lone surrogate in body.${field}`, path: base, key: adminKey, rawBody: `{"${field}":"\\ud800"}`, expect: expectInvalidAt(['body', field]) });
      add({
        what: `NUL in a key inside body.${field}`,
        path: base,
        key: adminKey,
        rawBody: json({ [field]: { 'k\u0000': 1 } }),
        expect: expectInvalidAt(['body', field, 'k\\u0000']),
      });
      add({
        what: `lone surrogate deep inside body.${field}`,
        path: base,
        key: adminKey,
        rawBody: `{"${field}":[{"a":["\\udc00"]}]}`,
        expect: expectInvalidAt(['body', field, 0, 'a', 0]),
      });
      add({
        what: `5,000 levels of nesting in body.${field}`,
        path: base,
        key: adminKey,
        rawBody: `{"${field}":${nested(5000)}}`,
        expect: (status, body) => {
          expect(status).toBe(422);
          expect(body.detail[0].loc.slice(0, 2)).toEqual(['body', field]);
          expect(body.detail[0].type).toBe('too_deep');
        },
      });
      add({ what: `wrong type in body.${field}`, path: base, key: adminKey, rawBody: json({ [field]: { nested: [true] } }) });
      add({ what: `null in body.${field}`, path: base, key: adminKey, rawBody: json({ [field]: null }) });
      add({ what: `a 100,000-character string in body.${field}`, path: base, key: adminKey, rawBody: json({ [field]: 'x'.repeat(100_000) }) });
      add({ what: `a huge number in body.${field}`, path: base, key: adminKey, rawBody: `{"${field}":1e400}` });
      if (refuses((e.body as z.ZodObject).shape[field], WORD)) {
        add({ what: `a word in typed body.${field}`, path: base, key: adminKey, rawBody: json({ [field]: WORD }), expect: expectInvalidAt(['body', field]) });
      }
    }
  }
  return cases;
}

const isErrorBody = (body: unknown) =>
  typeof body === 'object' &&
  body !== null &&
  Object.keys(body).sort().join() === 'code,detail' &&
  typeof (body as any).detail === 'string' &&
  (body as any).detail.length > 0 &&
  /^[a-z][a-z0-9_]*$/.test((body as any).code);
const isValidationBody = (body: unknown) =>
  typeof body === 'object' &&
  body !== null &&
  Object.keys(body).join() === 'detail' &&
  Array.isArray((body as any).detail) &&
  (body as any).detail.length > 0 &&
  (body as any).detail.every(
    (d: any) =>
      Object.keys(d).sort().join() === 'loc,msg,type' &&
      Array.isArray(d.loc) &&
      (VALIDATION_LOC_ROOTS as readonly string[]).includes(d.loc[0]) &&
      typeof d.msg === 'string' &&
      typeof d.type === 'string',
  );
/** A 422 is the validation list, or `{detail, code}` with one of the named codes. */
const isUnprocessableBody = (body: unknown) =>
  isValidationBody(body) || (isErrorBody(body) && (UNPROCESSABLE_CODES as readonly string[]).includes((body as any).code));

describe.each(engines)('the hostile client, every endpoint of the table (%s)', (engine) => {
  const svc = useService(engine);

  test('no 5xx and no answer outside the documented shapes', async () => {
    const statuses: Record<number, number> = {};
    const offShape: string[] = [];
    const unserved: string[] = [];
    let sent = 0;
    for (const [name, e] of Object.entries(endpoints) as [string, Endpoint][]) {
      // Endpoints in the table that this build does not serve yet (another piece adds them).
      const probe = await svc.api(e.method, fillPath(e));
      sent++;
      if (probe.status === 404 && typeof probe.body?.detail === 'string' && probe.body.detail.startsWith('No route')) {
        unserved.push(name);
        continue;
      }
      for (const c of casesFor(e, svc.adminKey)) {
        const headers: Record<string, string> = { ...c.headers };
        if (c.key) headers.authorization = `Bearer ${c.key}`;
        if (c.rawBody !== undefined) headers['content-type'] ??= 'application/json';
        const response = await fetch(svc.url + c.path, { method: c.method, headers, body: c.rawBody, signal: AbortSignal.timeout(20_000) });
        sent++;
        const text = await response.text();
        let body: unknown;
        try {
          body = JSON.parse(text);
        } catch {
          body = text;
        }
        statuses[response.status] = (statuses[response.status] ?? 0) + 1;
        const label = `${name} ${c.method} ${c.path.slice(0, 80)} (${c.what}) -> ${response.status} ${text.slice(0, 200)}`;
        expect(response.status, label).toBeLessThan(500);
        const documented = response.status < 400 || (response.status === 422 ? isUnprocessableBody(body) : isErrorBody(body));
        if (!documented) offShape.push(label);
        if (c.expect) {
          try {
            c.expect(response.status, body);
          } catch (error) {
            throw new Error(`${label}: ${(error as Error).message}`);
          }
        }
      }
    }
    console.log(
      `hostile suite on ${engine}: ${sent} requests, statuses ${JSON.stringify(statuses)}; not served by this build: ${unserved.join(', ') || 'none'}`,
    );
    expect(offShape).toEqual([]);
    expect(Object.keys(statuses).filter((s) => Number(s) >= 500)).toEqual([]);
    // Nothing outside the README's list of statuses.
    expect(
      Object.keys(statuses)
        .map(Number)
        .filter((s) => !(RESPONSE_STATUSES as readonly number[]).includes(s)),
    ).toEqual([]);
  });
});
