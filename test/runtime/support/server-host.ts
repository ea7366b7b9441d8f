// `agentctl server` as a separate process with the local runtime running fixture agents: the
// restart test kills it with SIGKILL. Prints `{url, key}` once listening (key: the bootstrap
// secret on an empty database, else null).
import { startServer } from '../../../src/server/main.js';
import { copyFixture } from './agents.js';

const [dataDir, databaseUrl] = process.argv.slice(2);
const server = await startServer({
  port: 0,
  dataDir: databaseUrl ? undefined : `${dataDir}/db`,
  databaseUrl: databaseUrl || undefined,
  blobDir: `${dataDir}/blobs`,
  runtime: 'local',
  runtimeOptions: { dataDir: dataDir!, prepareSource: copyFixture, reconcileIntervalMs: 100, healthIntervalMs: 200, graceMs: 2_000 },
});
process.stdout.write(`${JSON.stringify({ url: server.url, key: server.bootstrap.secret ?? null })}\n`);
process.once('SIGTERM', () => void server.close().then(() => process.exit(0)));
