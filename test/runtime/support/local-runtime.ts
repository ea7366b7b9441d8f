import { startDispatcher } from '../../../src/server/delivery/dispatcher.js';
import { markReplicaGone } from '../../../src/server/domain/registration.js';
import type { VersionSpec } from '../../../src/server/runtime/driver.js';
import { createLocalDriver } from '../../../src/server/runtime/local/index.js';
import { startReconciler } from '../../../src/server/runtime/reconciler.js';
import { registrationSecrets } from '../../../src/server/runtime/wiring.js';
import type { TestService } from '../../support/service.js';
import type { RuntimeSecretSource } from '../../../src/server/runtime/reconciler.js';

/** Secrets for tests that start the reconciler without the store's registration tokens. */
export const fakeSecretSource: RuntimeSecretSource = {
  signingSecret: async (versionId) => `whsec_for_${versionId}`,
  registrationToken: async () => `rt_${Math.random().toString(36).slice(2)}`,
};

/**
 * What `server start` runs beside the app, wired to a test service as main.ts wires it: the
 * dispatcher, a local driver (attached to the service, as the logs and metrics read it) and the
 * reconciler, with short intervals. `close()` stops the reconciler (and so the agents), then the dispatcher.
 */
export async function startLocalRuntime(
  svc: TestService,
  options: { dataDir: string; prepareSource: (spec: VersionSpec, dir: string) => Promise<void>; restartBackoffMs?: number },
) {
  const dispatcher = await startDispatcher(svc.store, { pollMs: 200, backoffBaseMs: 100 });
  const driver = createLocalDriver({
    dataDir: options.dataDir,
    prepareSource: options.prepareSource,
    healthIntervalMs: 200,
    stopGraceMs: 2_000,
    ...(options.restartBackoffMs !== undefined ? { restartBackoffMs: options.restartBackoffMs } : {}),
  });
  svc.service.runtime = driver;
  const reconciler = await startReconciler({
    store: svc.store,
    driver,
    baseUrl: svc.url,
    secrets: registrationSecrets(svc.store, svc.service.secretsKey),
    replicaGone: (versionId, acpUrl) => markReplicaGone(svc.store.db, versionId, acpUrl),
    intervalMs: 100,
    graceMs: 2_000,
  });
  return {
    driver,
    close: async () => {
      await reconciler.close();
      await dispatcher.close();
    },
  };
}
