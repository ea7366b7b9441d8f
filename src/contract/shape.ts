/**
 * Response shapes as plain data, and a parser for them that needs no zod. A short-lived process
 * (the CLI) parses one or two answers and exits: building zod and the contract's schemas for that
 * costs more than the rest of its start-up. `npm run build` writes the shapes of every endpoint's
 * response (response-shapes.ts) from the zod contract with shape-describe.ts, and
 * test/unit/response-shapes.test.ts checks the file is current and that this parser answers as
 * zod does (the same data out, defaults applied and unknown keys dropped; the same inputs refused).
 */

export type Shape =
  | { t: 'string'; min?: number; max?: number; length?: number; pattern?: [source: string, flags: string] }
  | { t: 'number'; int?: true; min?: number; gt?: number; max?: number; lt?: number }
  | { t: 'boolean' }
  | { t: 'null' }
  | { t: 'unknown' }
  | { t: 'literal'; values: (string | number | boolean | null)[] }
  | { t: 'enum'; values: (string | number)[] }
  | { t: 'array'; of: Shape; min?: number; max?: number }
  | { t: 'record'; of: Shape }
  /** `rest`: what happens to keys the shape does not name (zod's default: dropped). */
  | { t: 'object'; props: Record<string, Shape>; rest?: 'keep' | 'refuse' }
  | { t: 'optional'; of: Shape }
  | { t: 'nullable'; of: Shape }
  /** The value for a missing field; not itself parsed (as zod's `.default`). */
  | { t: 'default'; of: Shape; value: unknown }
  | { t: 'union'; of: Shape[] }
  /** A named shape of `ShapeTable.defs` (the contract's `.meta({ id })` schemas). */
  | { t: 'ref'; name: string };

export interface ShapeTable {
  defs: Record<string, Shape>;
  /** Every endpoint whose response parses here, by the endpoint table's name. */
  responses: Record<string, Shape>;
  /** Endpoints whose response uses what this parser cannot do (transforms, ...): callers use zod. */
  zodOnly: Record<string, string>;
}

export interface ShapeIssue {
  path: (string | number)[];
  message: string;
}

export type ShapeResult = { success: true; data: unknown } | { success: false; issues: ShapeIssue[] };

/** Parses `value` as `shape` (names resolved in `table.defs`), as zod's `safeParse` would. */
export function parseShape(table: Pick<ShapeTable, 'defs'>, shape: Shape, value: unknown): ShapeResult {
  const issues: ShapeIssue[] = [];
  const data = walk(table.defs, shape, value, [], issues);
  return issues.length ? { success: false, issues } : { success: true, data };
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function kind(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v;
}

function set(out: Record<string, unknown>, key: string, value: unknown): void {
  // A JSON key named __proto__ is data, not the object's prototype.
  if (key === '__proto__') Object.defineProperty(out, key, { value, enumerable: true, writable: true, configurable: true });
  else out[key] = value;
}

/** Whether a missing value is this shape's to fill (a default) rather than a miss. */
function fillsMissing(defs: Record<string, Shape>, shape: Shape): boolean {
  if (shape.t === 'ref') return fillsMissing(defs, defs[shape.name]);
  return shape.t === 'default' || (shape.t === 'optional' && fillsMissing(defs, shape.of));
}

function walk(defs: Record<string, Shape>, shape: Shape, v: unknown, path: (string | number)[], issues: ShapeIssue[]): unknown {
  const fail = (message: string) => {
    issues.push({ path, message });
    return undefined;
  };
  switch (shape.t) {
    case 'ref':
      return walk(defs, defs[shape.name], v, path, issues);
    case 'unknown':
      return v;
    case 'optional':
      if (v === undefined && !fillsMissing(defs, shape.of)) return undefined;
      return walk(defs, shape.of, v, path, issues);
    case 'nullable':
      return v === null ? null : walk(defs, shape.of, v, path, issues);
    case 'default':
      return v === undefined ? structuredClone(shape.value) : walk(defs, shape.of, v, path, issues);
    case 'null':
      return v === null ? v : fail(`expected null, received ${kind(v)}`);
    case 'boolean':
      return typeof v === 'boolean' ? v : fail(`expected boolean, received ${kind(v)}`);
    case 'string': {
      if (typeof v !== 'string') return fail(`expected string, received ${kind(v)}`);
      if (shape.min !== undefined && v.length < shape.min) return fail(`expected at least ${shape.min} characters`);
      if (shape.max !== undefined && v.length > shape.max) return fail(`expected at most ${shape.max} characters`);
      if (shape.length !== undefined && v.length !== shape.length) return fail(`expected exactly ${shape.length} characters`);
      if (shape.pattern && !new RegExp(shape.pattern[0], shape.pattern[1]).test(v)) return fail(`expected a string matching /${shape.pattern[0]}/`);
      return v;
    }
    case 'number': {
      if (typeof v !== 'number' || !Number.isFinite(v)) return fail(`expected number, received ${kind(v)}`);
      if (shape.int && !Number.isSafeInteger(v)) return fail('expected an integer');
      if (shape.min !== undefined && v < shape.min) return fail(`expected a number >= ${shape.min}`);
      if (shape.gt !== undefined && v <= shape.gt) return fail(`expected a number > ${shape.gt}`);
      if (shape.max !== undefined && v > shape.max) return fail(`expected a number <= ${shape.max}`);
      if (shape.lt !== undefined && v >= shape.lt) return fail(`expected a number < ${shape.lt}`);
      return v;
    }
    case 'literal':
    case 'enum':
      return shape.values.includes(v as never) ? v : fail(`expected one of ${shape.values.map((x) => JSON.stringify(x)).join(', ')}`);
    case 'array': {
      if (!Array.isArray(v)) return fail(`expected array, received ${kind(v)}`);
      if (shape.min !== undefined && v.length < shape.min) return fail(`expected at least ${shape.min} items`);
      if (shape.max !== undefined && v.length > shape.max) return fail(`expected at most ${shape.max} items`);
      return v.map((item, i) => walk(defs, shape.of, item, [...path, i], issues));
    }
    case 'record': {
      if (!isPlainObject(v)) return fail(`expected object, received ${kind(v)}`);
      const out: Record<string, unknown> = {};
      for (const key of Object.keys(v)) set(out, key, walk(defs, shape.of, v[key], [...path, key], issues));
      return out;
    }
    case 'object': {
      if (!isPlainObject(v)) return fail(`expected object, received ${kind(v)}`);
      const out: Record<string, unknown> = {};
      for (const key of Object.keys(shape.props)) {
        const value = walk(defs, shape.props[key], v[key], [...path, key], issues);
        if (value !== undefined || key in v) set(out, key, value);
      }
      if (shape.rest !== undefined) {
        for (const key of Object.keys(v)) {
          if (key in shape.props) continue;
          if (shape.rest === 'keep') set(out, key, v[key]);
          else issues.push({ path: [...path, key], message: 'unrecognized key' });
        }
      }
      return out;
    }
    case 'union': {
      for (const option of shape.of) {
        const attempt: ShapeIssue[] = [];
        const value = walk(defs, option, v, path, attempt);
        if (attempt.length === 0) return value;
      }
      return fail('matches none of the allowed shapes');
    }
  }
}
