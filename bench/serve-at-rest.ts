// Started by memory.bench.ts: a server on a free port, reporting when it listens, then idle.
import { startServer } from '../src/server/main.js';

const server = await startServer({ host: '127.0.0.1', port: 0, databaseUrl: process.env.DATABASE_URL || undefined, dataDir: process.env.AGENTCTL_DATA_DIR });
process.stdout.write(`listening ${server.url}\n`);
process.on('SIGTERM', () => void server.close().then(() => process.exit(0)));
