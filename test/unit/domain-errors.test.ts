import { describe, expect, test } from 'vitest';
import {
  conflict,
  forbidden,
  missing,
  notFound,
  preconditionRequired,
  stale,
  tooLarge,
  unauthenticated,
  unprocessable,
  badRequest,
} from '../../src/server/domain/errors.js';
import { entityTags, httpErrorOf } from '../../src/server/errors.js';

describe('domain refusals become HTTP answers in one place', () => {
  test.each([
    ['not found', notFound('Task', 'task_1'), 404, 'not_found', {}],
    ['not found with its own code', missing('No environment matches', 'no_environment'), 404, 'no_environment', {}],
    ['forbidden', forbidden('This API key may not write Agent a/b'), 403, 'forbidden', {}],
    [
      'unauthenticated',
      unauthenticated('invalid_registration_token', 'The token was used'),
      401,
      'invalid_registration_token',
      { 'WWW-Authenticate': 'Bearer' },
    ],
    ['conflict', conflict('task_terminal', 'Task task_1 is COMPLETED'), 409, 'task_terminal', {}],
    ['stale', stale('precondition_failed', 'State st_1 is at version 4', '4'), 412, 'precondition_failed', { ETag: '"4"' }],
    ['precondition required', preconditionRequired('Send If-Match', 'abc'), 428, 'precondition_required', { ETag: '"abc"' }],
    ['too large', tooLarge('state_too_large', 'At most 1 MiB'), 413, 'state_too_large', {}],
    ['unprocessable', unprocessable('invalid_archive', 'Member ../x leaves the tree'), 422, 'invalid_archive', {}],
    ['bad request', badRequest('upload_aborted', 'The upload ended early'), 400, 'upload_aborted', {}],
  ])('%s', (_name, error, status, code, headers) => {
    const answer = httpErrorOf(error);
    expect([answer.status, answer.code, answer.detail, answer.headers]).toEqual([status, code, error.detail, headers]);
  });
});

describe('entityTags reads If-Match and If-None-Match', () => {
  test.each([
    [undefined, []],
    ['*', ['*']],
    ['"3"', ['3']],
    ['W/"3", "4"', ['3', '4']],
    [
      ['"a"', '"b"'],
      ['a', 'b'],
    ],
  ])('%j -> %j', (header, tags) => {
    expect(entityTags(header)).toEqual(tags);
  });
});
