#!/usr/bin/env node
// Where a CPU profile's time went: self milliseconds per function, the mean over the profiles given
// (e.g. the sync bench's BENCH_SYNC_PROF=DIR output: `node scripts/cpuprofile-top.mjs DIR/server-up-*`).
// Native frames (hashing, zstd, system calls) are named with their JavaScript caller. Idle time, the
// profiler's own start (`post`) and `(program)` are left out. TOP=N lines (30).
import { readFileSync } from 'node:fs';

const files = process.argv.slice(2);
if (!files.length) {
  console.error('usage: node scripts/cpuprofile-top.mjs FILE.cpuprofile...');
  process.exit(2);
}
const where = (frame) => frame.url.split('/').slice(-2).join('/');
const self = new Map();
let total = 0;
for (const file of files) {
  const profile = JSON.parse(readFileSync(file, 'utf8'));
  const byId = new Map(profile.nodes.map((n) => [n.id, n]));
  const parentOf = new Map();
  for (const n of profile.nodes) for (const child of n.children ?? []) parentOf.set(child, n.id);
  for (let i = 0; i < profile.samples.length; i++) {
    const node = byId.get(profile.samples[i]);
    const name = node.callFrame.functionName;
    if (name === '(idle)' || name === 'post' || name === '(program)') continue;
    let label = `${name || '(anonymous)'} ${where(node.callFrame)}`;
    const caller = node.callFrame.url ? undefined : byId.get(parentOf.get(node.id));
    if (caller) label += ` <- ${caller.callFrame.functionName || '(anonymous)'} ${where(caller.callFrame)}`;
    const ms = profile.timeDeltas[i] / 1000 / files.length;
    total += ms;
    self.set(label, (self.get(label) ?? 0) + ms);
  }
}
console.log(`mean sampled ms per profile: ${total.toFixed(0)} (a sample is wall time: under load, time the thread waited for a core is in it)`);
for (const [label, ms] of [...self].sort((a, b) => b[1] - a[1]).slice(0, Number(process.env.TOP ?? 30))) {
  console.log(`${ms.toFixed(1).padStart(8)} ${((ms / total) * 100).toFixed(1).padStart(5)}%  ${label}`);
}
