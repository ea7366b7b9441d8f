/**
 * The kubernetes runtime (`agentctl server start --runtime kubernetes`). This module loads
 * @kubernetes/client-node: import it dynamically, only when that runtime is chosen.
 */
import type { RuntimeDriver } from '../driver.js';
import { KubernetesDriver, type KubernetesDriverOptions } from './driver.js';

export type { KubernetesDriverOptions } from './driver.js';
export { KubernetesDriver } from './driver.js';

export function createKubernetesDriver(options: KubernetesDriverOptions = {}): RuntimeDriver {
  return new KubernetesDriver(options);
}
