import { readFileSync } from 'node:fs';
import { describe, expect, test } from 'vitest';
import type { z } from 'zod';
import { endpoints, type EndpointName } from '../../src/contract/endpoints.js';
import { RESPONSE_SHAPES } from '../../src/contract/response-shapes.js';
import { parseShape, type Shape } from '../../src/contract/shape.js';
import { describeResponses, responseShapesSource } from '../../src/contract/shape-describe.js';

// The CLI parses answers with the generated shapes instead of zod (src/contract/shape.ts). These
// tests hold the two together: the file is what the contract says today, and for every endpoint the
// shape parser gives zod's verdict and zod's data on valid answers, answers with fields left out
// (defaults), unknown keys, and answers broken at every field.

const defs = RESPONSE_SHAPES.defs;
const resolve = (shape: Shape): Shape => (shape.t === 'ref' ? resolve(defs[shape.name]) : shape);

/** A value of the shape: `full` fills every optional field, `minimal` leaves out all it can; `pick` chooses among union options and enum values. */
function sample(shape: Shape, mode: 'full' | 'minimal', pick: number, extraKeys: boolean, depth = 0): unknown {
  const s = resolve(shape);
  switch (s.t) {
    case 'string': {
      const candidates = ['ok', 'x', 'abc-1', '2026-01-02T03:04:05.000Z', 'a'.repeat(s.min ?? 1)];
      const fits = (c: string) =>
        (s.min === undefined || c.length >= s.min) &&
        (s.max === undefined || c.length <= s.max) &&
        (s.length === undefined || c.length === s.length) &&
        (!s.pattern || new RegExp(s.pattern[0], s.pattern[1]).test(c));
      return candidates.find(fits) ?? 'x';
    }
    case 'number':
      return s.min ?? (s.gt !== undefined ? s.gt + 1 : s.int ? 3 : 2.5);
    case 'boolean':
      return pick % 2 === 0;
    case 'null':
      return null;
    case 'unknown':
      return { any: [1, 'two', null] };
    case 'literal':
    case 'enum':
      return s.values[pick % s.values.length];
    case 'array':
      return mode === 'minimal' && !s.min ? [] : [sample(s.of, mode, pick, extraKeys, depth + 1), sample(s.of, mode, pick + 1, extraKeys, depth + 1)];
    case 'record':
      return mode === 'minimal' ? {} : { first: sample(s.of, mode, pick, extraKeys, depth + 1) };
    case 'object': {
      const out: Record<string, unknown> = {};
      for (const [key, prop] of Object.entries(s.props)) {
        const p = resolve(prop);
        const leaveOut = mode === 'minimal' && (p.t === 'optional' || p.t === 'default');
        if (!leaveOut) out[key] = sample(prop, mode, pick, extraKeys, depth + 1);
      }
      if (extraKeys) out.zz_unknown_key = { from: 'a newer server' };
      return out;
    }
    case 'optional':
    case 'default':
      return sample(s.of, mode, pick, extraKeys, depth + 1);
    case 'nullable':
      return mode === 'minimal' ? null : sample(s.of, mode, pick, extraKeys, depth + 1);
    case 'union':
      return sample(s.of[pick % s.of.length], mode, pick, extraKeys, depth + 1);
  }
  throw new Error(`no sample for ${shape.t}`);
}

/** Copies of `value` each broken at one place: a wrong type, or a value just outside a bound. */
function breakages(shape: Shape, value: unknown): unknown[] {
  const s = resolve(shape);
  const out: unknown[] = [];
  const wrongType = typeof value === 'string' ? 42 : 'not the right type';
  if (s.t !== 'unknown' && s.t !== 'optional' && s.t !== 'default' && !(s.t === 'nullable' && value === null)) out.push(wrongType);
  if (s.t === 'nullable' || s.t === 'optional' || s.t === 'default') {
    if (value !== null && value !== undefined) out.push(...breakages(s.of, value));
    return out;
  }
  if (s.t === 'string' && s.max !== undefined) out.push('y'.repeat(s.max + 1));
  if (s.t === 'string' && s.min) out.push('');
  if (s.t === 'number' && s.int) out.push(1.5);
  if (s.t === 'number' && s.min !== undefined) out.push(s.min - 1);
  if (s.t === 'enum' || s.t === 'literal') out.push('NOT_ONE_OF_THEM');
  if (s.t === 'union') out.push({ matches: 'no option' });
  if (s.t === 'array' && Array.isArray(value) && value.length) for (const broken of breakages(s.of, value[0])) out.push([broken, ...value.slice(1)]);
  if (s.t === 'record' && value && typeof value === 'object')
    for (const [k, v] of Object.entries(value)) for (const broken of breakages(s.of, v)) out.push({ ...value, [k]: broken });
  if (s.t === 'object' && value && typeof value === 'object') {
    for (const [k, prop] of Object.entries(s.props)) {
      const v = (value as Record<string, unknown>)[k];
      if (v === undefined) continue;
      for (const broken of breakages(prop, v)) out.push({ ...value, [k]: broken });
      const p = resolve(prop);
      if (p.t !== 'optional' && p.t !== 'default') {
        const { [k]: _, ...without } = value as Record<string, unknown>;
        out.push(without);
      }
    }
  }
  return out;
}

describe('response shapes (the CLI parses answers without zod)', () => {
  test('src/contract/response-shapes.ts is what the contract says today (run npm run build)', () => {
    expect(readFileSync('src/contract/response-shapes.ts', 'utf8')).toBe(responseShapesSource(describeResponses()));
  });

  test('every JSON answer has a shape: none falls back to zod today', () => {
    expect(RESPONSE_SHAPES.zodOnly).toEqual({});
    expect(Object.keys(RESPONSE_SHAPES.responses).length).toBeGreaterThan(70);
  });

  const names = Object.keys(RESPONSE_SHAPES.responses) as EndpointName[];
  test.each(names)('%s: the shape parser answers as zod does', (name) => {
    const shape = RESPONSE_SHAPES.responses[name];
    const schema = endpoints[name].response as z.ZodType;
    const valid: unknown[] = [];
    for (const mode of ['full', 'minimal'] as const)
      for (let pick = 0; pick < 3; pick++) for (const extraKeys of [false, true]) valid.push(sample(shape, mode, pick, extraKeys));
    let compared = 0;
    for (const value of valid) {
      const ours = parseShape(RESPONSE_SHAPES, shape, value);
      const zods = schema.safeParse(value);
      expect({ success: ours.success, data: ours.success ? ours.data : undefined }, JSON.stringify(value)).toStrictEqual({
        success: zods.success,
        data: zods.success ? zods.data : undefined,
      });
      expect(ours.success, JSON.stringify(value)).toBe(true);
      for (const broken of breakages(shape, value)) {
        const verdict = parseShape(RESPONSE_SHAPES, shape, broken);
        expect(verdict.success, JSON.stringify(broken)).toBe(schema.safeParse(broken).success);
        expect(verdict.success, JSON.stringify(broken)).toBe(false);
        compared++;
      }
    }
    expect(compared).toBeGreaterThan(0);
  });

  test('defaults are filled in, unknown keys dropped, and a miss names its path', () => {
    const version = {
      id: 'ver_1',
      number: 1,
      branch_id: 'br_1',
      git_hash: 'abc1234',
      git_branch: 'main',
      author_name: 'A',
      author_email: 'a@example.com',
      image_url: 'img',
      status: 'ACTIVE',
      deployed_at: '2026-01-01T00:00:00.000Z',
      sdk_type: 'alpha_agent_sdk',
      acp_type: 'async',
      extra: 1,
    };
    const parsed = parseShape(RESPONSE_SHAPES, RESPONSE_SHAPES.responses.listAgentVersions, { total: 1, versions: [version], branch_id: null });
    expect(parsed).toEqual({
      success: true,
      data: {
        total: 1,
        branch_id: null,
        versions: [
          {
            ...Object.fromEntries(Object.entries(version).filter(([k]) => k !== 'extra')),
            git_message: '',
            is_dirty: false,
            replicas: 0,
            rollback_count: 0,
            double_texting: 'enqueue',
          },
        ],
      },
    });
    expect(
      parseShape(RESPONSE_SHAPES, RESPONSE_SHAPES.responses.listAgentVersions, { total: 1, versions: [{ ...version, status: 'NAPPING' }], branch_id: null }),
    ).toEqual({
      success: false,
      issues: [
        { path: ['versions', 0, 'status'], message: 'expected one of "DEPLOYING", "ACTIVE", "FAILED", "UNHEALTHY", "DRAINING", "RETIRED", "ROLLED_BACK"' },
      ],
    });
  });
});
