#!/usr/bin/env node
// Runs every benchmark in bench/ (or those named on the command line) one after another, each in its
// own process so one's memory does not weigh on the next. Each prints its figures as ratios against a
// floor it measures in the same run; nothing here asserts a time.
import { readdirSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import path from 'node:path';

const root = path.dirname(path.dirname(fileURLToPath(import.meta.url)));
const wanted = process.argv.slice(2);
const files = readdirSync(path.join(root, 'bench'))
  .filter((f) => f.endsWith('.bench.ts') || f.endsWith('.bench.mjs'))
  .filter((f) => wanted.length === 0 || wanted.some((w) => f.includes(w)))
  .sort();
let failed = 0;
for (const file of files) {
  console.log(`\n== ${file}`);
  const args = file.endsWith('.ts') ? ['--import', 'tsx', path.join('bench', file)] : [path.join('bench', file)];
  const result = spawnSync(process.execPath, ['--expose-gc', ...args], { cwd: root, stdio: 'inherit', env: process.env });
  if (result.status !== 0) failed++;
}
process.exit(failed ? 1 : 0);
