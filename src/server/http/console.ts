// The web console (README "Web console"): its built files (dist/console/, from `npm run build`)
// under /console/, on the API's port. Hashed asset names are cached for a year; the page itself is
// revalidated each time, so a new build is picked up at once. Every console response carries a
// strict Content-Security-Policy: scripts and styles from this origin only, no inline code, and no
// framing. A browser asking for `/` (Accept: text/html) is sent to /console/.
import { existsSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { FastifyPluginAsync, FastifyReply } from 'fastify';
import { CONSOLE_PATH } from '../../contract/console.js';

export const CONSOLE_CSP = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "font-src 'self'",
  "connect-src 'self'",
  "manifest-src 'self'",
  "base-uri 'none'",
  "form-action 'self'",
  "frame-ancestors 'none'",
].join('; ');

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.json': 'application/json',
  '.map': 'application/json',
};

/** dist/console of this package: found from this module, whether it runs from src/ (tests) or a dist/ chunk. */
export function defaultConsoleDir(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(path.join(dir, 'package.json')) && existsSync(path.join(dir, 'bin', 'agentctl.js'))) return path.join(dir, 'dist', 'console');
    const parent = path.dirname(dir);
    if (parent === dir) return path.join(process.cwd(), 'dist', 'console');
    dir = parent;
  }
}

const securityHeaders = (reply: FastifyReply) =>
  reply.headers({
    'content-security-policy': CONSOLE_CSP,
    'x-content-type-options': 'nosniff',
    'x-frame-options': 'DENY',
    // A sign-in link's token is in the page's URL: it must not leave in a Referer.
    'referrer-policy': 'no-referrer',
    'cross-origin-opener-policy': 'same-origin',
  });

export const consolePages: FastifyPluginAsync<{ dir?: string }> = async (app, options) => {
  const dir = options.dir ?? defaultConsoleDir();
  const assets = path.join(dir, 'assets');
  let index: Buffer | undefined;
  const page = () => {
    if (!index) index = existsSync(path.join(dir, 'index.html')) ? readFileSync(path.join(dir, 'index.html')) : undefined;
    return index;
  };

  app.get('/', async (request, reply) => {
    if (/\btext\/html\b/.test(request.headers.accept ?? '')) return reply.redirect(CONSOLE_PATH, 302);
    return reply.callNotFound();
  });
  app.get('/console', async (_request, reply) => reply.redirect(CONSOLE_PATH, 301));
  app.get('/console/*', async (request, reply) => {
    const rest = (request.params as { '*': string })['*'];
    securityHeaders(reply);
    if (rest.startsWith('assets/')) {
      const name = rest.slice('assets/'.length);
      const file = path.join(assets, name);
      // Only plain names inside assets/: no traversal, no directories.
      if (!/^[\w.-]+$/.test(name) || !existsSync(file) || !statSync(file).isFile()) {
        return reply
          .code(404)
          .type('application/json')
          .send({ detail: `No console file ${rest}`, code: 'not_found' });
      }
      reply.header('cache-control', 'public, max-age=31536000, immutable');
      reply.header('vary', 'accept-encoding');
      reply.type(TYPES[path.extname(name)] ?? 'application/octet-stream');
      const gz = `${file}.gz`;
      if (/\bgzip\b/.test(String(request.headers['accept-encoding'] ?? '')) && existsSync(gz)) {
        reply.header('content-encoding', 'gzip');
        return reply.send(readFileSync(gz));
      }
      return reply.send(readFileSync(file));
    }
    const html = page();
    if (!html) return reply.code(404).type('application/json').send({ detail: 'The console is not built: run `npm run build`', code: 'console_not_built' });
    // Every console route (/console/tasks/task_...) is the one page; the script reads the path.
    reply.header('cache-control', 'no-cache');
    return reply.type('text/html; charset=utf-8').send(html);
  });
};
