import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import { EMPTY_TREE_CHECKSUM, emptyArchive, readArchive } from '../../src/sync/index.js';

/**
 * A stand-in for the agentctl service at the HTTP boundary, for the AgentServer's protocol tests:
 * it answers registration as told and records every request. Real-service behaviour is tested
 * against test/support/service.ts.
 */
export interface FakeControlPlane {
  url: string;
  requests: { method: string; path: string; body: any; headers: IncomingMessage['headers']; at_ms: number }[];
  /** Filesystem archives by fs id, as uploaded (the ADK syncs task workspaces with them). */
  archives: Map<string, { archive: Buffer; checksum: string; paths: string[] }>;
  /** What `POST /versions/register` answers: the runtime key, a refusal, or a 503 every time. */
  registration: { kind: 'ok'; key: string } | { kind: 'refuse'; status: number; code: string; detail: string } | { kind: 'unavailable' };
  close(): Promise<void>;
}

const now = () => new Date().toISOString();

export async function startFakeControlPlane(): Promise<FakeControlPlane> {
  const fake: FakeControlPlane = {
    url: '',
    requests: [],
    archives: new Map(),
    registration: { kind: 'ok', key: 'agk_runtime_fake' },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
  let messages = 0;
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const path = req.url ?? '';
      const archivePath = /^\/filesystems\/([^/]+)\/archive$/.exec(path);
      if (archivePath) {
        const fsId = decodeURIComponent(archivePath[1]!);
        const stored = fake.archives.get(fsId) ?? { archive: emptyArchive(), checksum: EMPTY_TREE_CHECKSUM, paths: [] };
        fake.requests.push({ method: req.method ?? '', path, body: undefined, headers: req.headers, at_ms: Date.now() });
        if (fsId.startsWith('fs_broken')) {
          res.writeHead(500, { 'content-type': 'application/json' });
          return res.end(JSON.stringify({ detail: 'The blob store is unavailable', code: 'internal_error' }));
        }
        if (req.method === 'GET') {
          if (req.headers['if-none-match'] === `"${stored.checksum}"`) return res.writeHead(304).end();
          res.writeHead(200, { 'content-type': 'application/zstd', etag: `"${stored.checksum}"` });
          return res.end(stored.archive);
        }
        if (fake.archives.has(fsId) && req.headers['if-match'] !== `"${stored.checksum}"`) {
          res.writeHead(412, { 'content-type': 'application/json' });
          return res.end(JSON.stringify({ detail: 'The filesystem changed since your base', code: 'precondition_failed' }));
        }
        const archive = Buffer.concat(chunks);
        const summary = await readArchive(Readable.from([archive]));
        fake.archives.set(fsId, { archive, checksum: summary.checksum, paths: summary.entries.map((e) => e.path) });
        res.writeHead(200, { 'content-type': 'application/json' });
        return res.end(JSON.stringify({ id: fsId, archive_checksum: summary.checksum }));
      }
      const text = Buffer.concat(chunks).toString('utf8');
      const body = text ? JSON.parse(text) : undefined;
      fake.requests.push({ method: req.method ?? '', path, body, headers: req.headers, at_ms: Date.now() });
      const send = (status: number, payload: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(payload));
      };
      if (req.method === 'POST' && path === '/versions/register') {
        const r = fake.registration;
        if (r.kind === 'refuse') return send(r.status, { detail: r.detail, code: r.code });
        if (r.kind === 'unavailable') return send(503, { detail: 'Starting up', code: 'unavailable' });
        return send(200, {
          version: {
            id: body.version_id,
            branch_id: 'br_1',
            git_hash: 'abc',
            git_branch: 'main',
            author_name: 'a',
            author_email: 'a@x',
            image_url: 'local://fs_1',
            status: 'ACTIVE',
            number: 1,
            deployed_at: now(),
            sdk_type: 'alpha_agent_sdk',
            acp_type: 'async',
          },
          tasks_migrated: 0,
          agent_id: 'agt_1',
          agent_name: 'default/fake',
          branch_id: 'br_1',
          version_status: 'ACTIVE',
          agent_api_key: r.key,
        });
      }
      const handlerError = /^\/tasks\/([^/]+)\/handler-errors$/.exec(path);
      if (req.method === 'POST' && (handlerError || path === '/messages')) {
        messages++;
        const content = handlerError
          ? { type: 'data', data: { handler_error: body } }
          : typeof body.content === 'string'
            ? { type: 'text', text: body.content }
            : body.content;
        return send(201, {
          id: `msg_${messages}`,
          task_id: handlerError ? handlerError[1] : body.task_id,
          author: 'agent',
          content,
          streaming_status: null,
          streaming_error: null,
          sequence_id: messages,
          updated_sequence_id: messages,
          created_at: now(),
          updated_at: now(),
        });
      }
      // The completion lease: every delivery is known and leased until completed.
      const lease = /^\/deliveries\/([^/]+)\/(complete|renew)$/.exec(path);
      if (req.method === 'POST' && lease) {
        const done = lease[2] === 'complete';
        return send(200, {
          id: lease[1],
          task_id: 'task_fake',
          method: 'event/send',
          status: done ? 'done' : 'leased',
          attempts: 1,
          lease_expires_at: done ? null : now(),
        });
      }
      send(404, { detail: `No route ${req.method} ${path}`, code: 'not_found' });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  fake.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return fake;
}
