// A request's input checked against its endpoint's schemas: path, query and body together, every
// problem reported in one 422 (Fastify's own schema validation stops at the first part that fails).
import type { FastifyRequest } from 'fastify';
import type { z } from 'zod';
import type { Endpoint } from '../../contract/endpoints.js';
import { ValidationFailure, zodIssuesToItems, type ValidationItem } from '../errors.js';
import { unsafeInputItems } from '../input-guard.js';

export interface ValidatedInput {
  params: unknown;
  query: unknown;
  body: unknown;
}

export function validateInput(endpoint: Endpoint, request: FastifyRequest): ValidatedInput {
  const binaryBody = endpoint.binary?.request;
  // What no schema can say, for every endpoint alike: NUL, lone surrogates, nesting, empty filters.
  const unsafe = [
    ...unsafeInputItems('path', request.params),
    ...unsafeInputItems('query', request.query),
    ...(endpoint.body && !binaryBody ? unsafeInputItems('body', request.body) : []),
  ];
  if (unsafe.length) throw new ValidationFailure(unsafe);
  const items: ValidationItem[] = [];
  const parse = (where: 'path' | 'query' | 'body', schema: z.ZodType | undefined, value: unknown) => {
    if (!schema) return where === 'body' ? undefined : {};
    // reportInput: lets zodIssuesToItems tell a missing field (no input) from a wrong-typed one.
    const result = schema.safeParse(value, { reportInput: true });
    if (!result.success) {
      items.push(...zodIssuesToItems(where, result.error.issues));
      return undefined;
    }
    return result.data;
  };
  const params = parse('path', endpoint.params, request.params);
  const query = parse('query', endpoint.query, request.query);
  const body = binaryBody ? undefined : parse('body', endpoint.body, request.body);
  if (items.length) throw new ValidationFailure(items);
  return { params, query, body };
}
