// How request bodies are read: JSON (UTF-8, uncompressed; empty is no body; malformed is a 422),
// archives as a stream, and nothing else (text/plain and other types are a 415).
import fp from 'fastify-plugin';
import type { FastifyRequest } from 'fastify';
import { ARCHIVE_MEDIA_TYPES } from '../../contract/filesystems.js';
import { ApiError, ValidationFailure } from '../errors.js';

export const bodyParsers = fp(
  async (app) => {
    // Archive uploads stream to the blob store: the handler gets the raw body, no size limit here
    // (the upload enforces its own archive limits as it reads).
    app.addContentTypeParser([...ARCHIVE_MEDIA_TYPES], (_request, payload, done) => done(null, payload));

    // Bodies are JSON: text/plain is a 415, not a string for the schema to refuse.
    app.removeContentTypeParser('text/plain');
    // Empty JSON bodies are "no body" (some clients send the header on DELETE); malformed JSON is a 422.
    const defaultJson = app.getDefaultJsonParser('error', 'error');
    app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
      const unsupported = unsupportedJsonEncoding(request);
      if (unsupported) return done(unsupported, undefined);
      if (body === '' || (typeof body === 'string' && body.trim() === '')) return done(null, undefined);
      defaultJson(request, body as string, (error, value) => {
        if (error) return done(new ValidationFailure([{ loc: ['body'], msg: `Malformed JSON: ${error.message}`, type: 'json_invalid' }]), undefined);
        done(null, value);
      });
    });
  },
  { name: 'agentctl-body-parsers' },
);

/** A JSON body in another charset or compressed is refused (415) rather than misread. */
function unsupportedJsonEncoding(request: FastifyRequest): ApiError | undefined {
  const encoding = request.headers['content-encoding']?.trim().toLowerCase();
  if (encoding && encoding !== 'identity') {
    return new ApiError(415, 'unsupported_media_type', `Content-Encoding ${encoding} is not supported: send the body uncompressed`);
  }
  const charset = /;\s*charset\s*=\s*"?([^";\s]*)"?/i.exec(request.headers['content-type'] ?? '')?.[1]?.toLowerCase();
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
    return new ApiError(415, 'unsupported_media_type', `Charset ${charset} is not supported: send JSON as UTF-8`);
  }
  return undefined;
}
