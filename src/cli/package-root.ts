import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CliError } from './errors.js';

/**
 * The directory of the running agentctl package (the one with its package.json): what an agent
 * project's `node_modules/agentctl` links to (`init`, `dev`).
 */
export function packageRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const manifest = path.join(dir, 'package.json');
    if (existsSync(manifest) && JSON.parse(readFileSync(manifest, 'utf8')).name === 'agentctl') return dir;
    const parent = path.dirname(dir);
    if (parent === dir) throw new CliError('Cannot find the agentctl package this command runs from');
    dir = parent;
  }
}
