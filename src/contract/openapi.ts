import { z } from 'zod';
import { endpoints, type Endpoint } from './endpoints.js';
import { ErrorBody, UNPROCESSABLE_CODES, ValidationErrorBody } from './common.js';

type JsonSchema = Record<string, unknown>;

/** Builds the OpenAPI 3.1 document from the endpoint table (JSON Schema 2020-12 is 3.1's dialect). */
export function buildOpenApiDocument(version: string): JsonSchema {
  const components: Record<string, JsonSchema> = {};
  const toSchema = (schema: z.ZodType, io: 'input' | 'output'): JsonSchema => {
    const json = z.toJSONSchema(schema, {
      target: 'draft-2020-12',
      io,
      unrepresentable: 'any',
    }) as JsonSchema;
    const defs = (json.$defs ?? {}) as Record<string, JsonSchema>;
    for (const [name, def] of Object.entries(defs)) components[name] ??= def;
    delete json.$defs;
    delete json.$schema;
    // A schema that is itself a named component comes back with its `id`; refer to it instead.
    if (typeof json.id === 'string') {
      const name = json.id;
      delete json.id;
      components[name] ??= json;
      return { $ref: `#/components/schemas/${name}` };
    }
    return json;
  };
  const validation = toSchema(ValidationErrorBody, 'output');
  const error = toSchema(ErrorBody, 'output');
  const errorResponses = {
    '422': { description: 'Validation error', content: { 'application/json': { schema: validation } } },
    default: { description: 'Error', content: { 'application/json': { schema: error } } },
  };
  // An upload's content is checked past the schemas: a 422 there may also be `{detail, code}`.
  const unprocessable = {
    description: `Validation error, or content that cannot be used (\`{detail, code}\` with code ${UNPROCESSABLE_CODES.join(', ')})`,
    content: {
      'application/json': {
        schema: {
          oneOf: [validation, { ...error, properties: { ...(error.properties as object), code: { type: 'string', enum: [...UNPROCESSABLE_CODES] } } }],
        },
      },
    },
  };

  const paths: Record<string, Record<string, unknown>> = {};
  for (const [operationId, e] of Object.entries(endpoints) as [string, Endpoint][]) {
    const path = e.path.replace(/:([a-z_]+)/g, '{$1}').replace(/\/\*$/, '/{path}');
    const parameters: unknown[] = [];
    for (const [where, schema] of [
      ['path', e.params],
      ['query', e.query],
      ['header', e.headers],
    ] as const) {
      if (!schema) continue;
      for (const [name, field] of Object.entries(schema.shape)) {
        parameters.push({
          name: name === '*' ? 'path' : name,
          in: where,
          required: where === 'path' || !(field as z.ZodType).safeParse(undefined).success,
          schema: toSchema(field as z.ZodType, 'input'),
        });
      }
    }
    // Headers the route flags imply (routes.ts), documented like declared ones.
    if (e.idempotencyKey) {
      parameters.push({
        name: 'Idempotency-Key',
        in: 'header',
        required: false,
        description: 'The same key and body within 24 h answers the first response again',
        schema: { type: 'string', minLength: 1, maxLength: 255 },
      });
    }
    if (e.sse) {
      parameters.push({ name: 'Last-Event-ID', in: 'header', required: false, description: 'Resume after this sequence_id', schema: { type: 'string' } });
    }
    const headers = e.responseHeaders
      ? { headers: Object.fromEntries(Object.entries(e.responseHeaders).map(([name, description]) => [name, { description, schema: { type: 'string' } }])) }
      : {};
    const success = e.sse ? 'text/event-stream' : (e.binary?.response ?? 'application/json');
    paths[path] ??= {};
    paths[path][e.method.toLowerCase()] = {
      operationId,
      summary: e.summary,
      tags: [e.tag],
      ...(e.auth === false ? { security: [] } : {}),
      ...(parameters.length ? { parameters } : {}),
      ...(e.body
        ? {
            requestBody: {
              required: true,
              content: Object.fromEntries((e.binary?.request ?? ['application/json']).map((type) => [type, { schema: toSchema(e.body!, 'input') }])),
            },
          }
        : {}),
      responses: {
        [String(e.status)]: { description: 'OK', ...headers, content: { [success]: { schema: toSchema(e.response, 'output') } } },
        ...(e.binary?.response ? { '304': { description: 'Not modified (If-None-Match matched the ETag)' } } : {}),
        ...errorResponses,
        ...(e.binary?.request ? { '422': unprocessable } : {}),
      },
    };
  }
  const document = {
    openapi: '3.1.0',
    info: { title: 'agentctl service', version, description: 'Agent deployment and task service' },
    components: {
      schemas: Object.fromEntries(Object.entries(components).sort(([a], [b]) => a.localeCompare(b))),
      securitySchemes: { bearer: { type: 'http', scheme: 'bearer' } },
    },
    security: [{ bearer: [] }],
    paths,
  };
  // zod names a top-level component `#/$defs/X`; in OpenAPI every component lives in one place.
  return JSON.parse(JSON.stringify(document).replaceAll('"#/$defs/', '"#/components/schemas/'));
}
