// A process that hosts a local driver running one fixture agent, then waits to be killed: the
// orphan test kills it with SIGKILL and checks that the agent goes too. Prints `{pid}` when ready.
import { createLocalDriver } from '../../../src/server/runtime/local/index.js';
import { copyFixture, recordHappenings, specFor, testSecrets } from './agents.js';

const [dataDir, fixture] = process.argv.slice(2);
const driver = createLocalDriver({ dataDir: dataDir!, prepareSource: copyFixture });
const happenings = recordHappenings(driver);
const spec = specFor(fixture!);
await driver.start(spec, testSecrets());
await happenings.next(spec.versionId, 'ready');
process.stdout.write(`${JSON.stringify({ pid: driver.status(spec.versionId)!.replicas[0]!.pid })}\n`);
setInterval(() => {}, 60_000);
