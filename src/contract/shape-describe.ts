// The zod contract's response schemas as plain shapes (shape.ts), for `npm run build` to write into
// response-shapes.ts and for the test that keeps that file current. Build and test code only: it
// loads zod and every schema.
import { z } from 'zod';
import { endpoints, type Endpoint, type EndpointName } from './endpoints.js';
import type { Shape, ShapeTable } from './shape.js';

/** A schema (or a check of one) that the zod-free parser cannot reproduce. */
export class UnsupportedSchema extends Error {}

// biome-ignore lint/suspicious/noExplicitAny: zod's internal definitions are untyped
type Def = Record<string, any> & { type: string };
const defOf = (schema: z.ZodType): Def => (schema as unknown as { _zod: { def: Def } })._zod.def;

/** Every JSON response of the endpoint table as a shape; the rest (SSE, binary, transforms) named in `zodOnly`. */
export function describeResponses(): ShapeTable {
  const table: ShapeTable = { defs: {}, responses: {}, zodOnly: {} };
  for (const name of Object.keys(endpoints).sort() as EndpointName[]) {
    const endpoint = endpoints[name] as Endpoint;
    if (endpoint.sse || endpoint.binary?.response) continue;
    const defs = { ...table.defs };
    try {
      table.responses[name] = describe(endpoint.response, defs);
      table.defs = defs;
    } catch (error) {
      if (!(error instanceof UnsupportedSchema)) throw error;
      table.zodOnly[name] = error.message;
    }
  }
  table.defs = Object.fromEntries(Object.entries(table.defs).sort(([a], [b]) => a.localeCompare(b)));
  return table;
}

/** One schema as a shape; schemas with a registry `id` become named defs (each described once). */
export function describe(schema: z.ZodType, defs: Record<string, Shape>): Shape {
  const id = z.globalRegistry.get(schema)?.id;
  if (typeof id === 'string') {
    if (!(id in defs)) {
      defs[id] = { t: 'unknown' }; // a placeholder while it is described (a cycle would read it)
      defs[id] = describeDef(schema, defs);
    }
    return { t: 'ref', name: id };
  }
  return describeDef(schema, defs);
}

function describeDef(schema: z.ZodType, defs: Record<string, Shape>): Shape {
  const def = defOf(schema);
  // biome-ignore lint/suspicious/noExplicitAny: zod's internal definitions are untyped
  const checks = (def.checks ?? []).map((c: any) => c._zod.def as Record<string, any>);
  switch (def.type) {
    case 'string': {
      if (def.format !== undefined) throw new UnsupportedSchema(`string format ${def.format}`);
      const shape: Extract<Shape, { t: 'string' }> = { t: 'string' };
      for (const c of checks) {
        if (c.check === 'min_length') shape.min = Math.max(shape.min ?? 0, c.minimum);
        else if (c.check === 'max_length') shape.max = Math.min(shape.max ?? Infinity, c.maximum);
        else if (c.check === 'length_equals') shape.length = c.length;
        else if (c.check === 'string_format' && c.format === 'regex' && !shape.pattern) shape.pattern = [c.pattern.source, c.pattern.flags];
        else throw new UnsupportedSchema(`string check ${c.check}${c.format ? ` ${c.format}` : ''}`);
      }
      return shape;
    }
    case 'number': {
      const shape: Extract<Shape, { t: 'number' }> = { t: 'number' };
      if (def.format !== undefined && def.format !== 'safeint') throw new UnsupportedSchema(`number format ${def.format}`);
      if (def.format === 'safeint') shape.int = true;
      for (const c of checks) {
        if (c.check === 'number_format' && c.format === 'safeint') shape.int = true;
        else if (c.check === 'greater_than' && c.inclusive) shape.min = Math.max(shape.min ?? -Infinity, c.value);
        else if (c.check === 'greater_than') shape.gt = Math.max(shape.gt ?? -Infinity, c.value);
        else if (c.check === 'less_than' && c.inclusive) shape.max = Math.min(shape.max ?? Infinity, c.value);
        else if (c.check === 'less_than') shape.lt = Math.min(shape.lt ?? Infinity, c.value);
        else throw new UnsupportedSchema(`number check ${c.check}${c.format ? ` ${c.format}` : ''}`);
      }
      return shape;
    }
    case 'boolean':
    case 'null':
      noChecks(def, checks);
      return { t: def.type };
    case 'unknown':
    case 'any':
      noChecks(def, checks);
      return { t: 'unknown' };
    case 'literal':
      noChecks(def, checks);
      for (const v of def.values) if (v !== null && !['string', 'number', 'boolean'].includes(typeof v)) throw new UnsupportedSchema(`literal ${String(v)}`);
      return { t: 'literal', values: [...def.values] };
    case 'enum':
      noChecks(def, checks);
      return { t: 'enum', values: [...new Set(Object.values(def.entries as Record<string, string | number>))] };
    case 'array': {
      const shape: Extract<Shape, { t: 'array' }> = { t: 'array', of: describe(def.element, defs) };
      for (const c of checks) {
        if (c.check === 'min_length') shape.min = Math.max(shape.min ?? 0, c.minimum);
        else if (c.check === 'max_length') shape.max = Math.min(shape.max ?? Infinity, c.maximum);
        else throw new UnsupportedSchema(`array check ${c.check}`);
      }
      return shape;
    }
    case 'record': {
      noChecks(def, checks);
      const key = defOf(def.keyType);
      if (key.type !== 'string' || key.format !== undefined || (key.checks ?? []).length) throw new UnsupportedSchema('record keys other than plain strings');
      return { t: 'record', of: describe(def.valueType, defs) };
    }
    case 'object': {
      noChecks(def, checks);
      const props: Record<string, Shape> = {};
      for (const [key, value] of Object.entries(def.shape as Record<string, z.ZodType>)) props[key] = describe(value, defs);
      const shape: Extract<Shape, { t: 'object' }> = { t: 'object', props };
      if (def.catchall !== undefined) {
        const rest = defOf(def.catchall).type;
        if (rest === 'unknown' || rest === 'any') shape.rest = 'keep';
        else if (rest === 'never') shape.rest = 'refuse';
        else throw new UnsupportedSchema(`object catchall ${rest}`);
      }
      return shape;
    }
    case 'optional':
    case 'nullable':
      noChecks(def, checks);
      return { t: def.type, of: describe(def.innerType, defs) };
    case 'default': {
      noChecks(def, checks);
      const value = def.defaultValue;
      if (JSON.stringify(value) === undefined || JSON.stringify(JSON.parse(JSON.stringify(value))) !== JSON.stringify(value))
        throw new UnsupportedSchema('a default that is not JSON');
      return { t: 'default', of: describe(def.innerType, defs), value };
    }
    case 'union':
      noChecks(def, checks);
      return { t: 'union', of: (def.options as z.ZodType[]).map((o) => describe(o, defs)) };
    default:
      throw new UnsupportedSchema(`${def.type} schema`);
  }
}

// biome-ignore lint/suspicious/noExplicitAny: zod's internal definitions are untyped
function noChecks(def: Def, checks: Record<string, any>[]): void {
  if (checks.length) throw new UnsupportedSchema(`${def.type} check ${checks[0].check}`);
}

/** The source of response-shapes.ts for a table: one line per shape, so a change reads as a one-line diff. */
export function responseShapesSource(table: ShapeTable): string {
  const section = (name: keyof ShapeTable) => [
    `  ${name}: {`,
    ...Object.entries(table[name]).map(([key, value]) => `    ${JSON.stringify(key)}: ${JSON.stringify(value)},`),
    '  },',
  ];
  return [
    '// Generated by `npm run build` from the response schemas of src/contract/endpoints.ts (shape-describe.ts).',
    '// Do not edit: test/unit/response-shapes.test.ts fails when this file is stale.',
    "import type { ShapeTable } from './shape.js';",
    '',
    'export const RESPONSE_SHAPES: ShapeTable = {',
    ...section('defs'),
    ...section('responses'),
    ...section('zodOnly'),
    '};',
    '',
  ].join('\n');
}
