// PGlite's in-memory files, with @electric-sql/pglite alone (no agentctl code): the minimal reproduction
// for an upstream report (issue 20). Emscripten's MEMFS grows a file by an eighth of its size past
// 1 MiB, each growth a new array and a copy of the whole file, so a file written from empty to n bytes
// is copied about 8n bytes over. PostgreSQL zero-fills each new 16 MiB WAL segment (wal_init_zero, on
// by default) in 8 KiB writes: 31 growths and 134 MB copied per segment, inside whichever statement
// crossed into it. The same inserts with wal_init_zero=off (what agentctl starts PGlite with) are
// the floor: growths counted by wrapping MEMFS.expandFileStorage, and the slowest statement of each.
import { PGlite } from '@electric-sql/pglite';

const ROWS = Number(process.env.BENCH_PGLITE_MEMFS_ROWS ?? 6000);

async function run(label, extra) {
  const db = new PGlite({ startParams: [...PGlite.defaultStartParams, ...extra] });
  await db.waitReady;
  const FS = db.mod.FS;
  const MEMFS = FS.filesystems.MEMFS;
  const original = MEMFS.expandFileStorage;
  const grown = new Map();
  MEMFS.expandFileStorage = function (node, capacity) {
    const before = node.contents ? node.contents.length : 0;
    const result = original.call(this, node, capacity);
    if ((node.contents ? node.contents.length : 0) !== before) {
      const name = FS.getPath(node).replace(/\d+/g, 'N');
      const entry = grown.get(name) ?? { growths: 0, copied: 0 };
      entry.growths++;
      entry.copied += node.usedBytes;
      grown.set(name, entry);
    }
    return result;
  };
  // 8 KB rows stored as they are: about 3 WAL segments.
  await db.exec('CREATE TABLE t (n int PRIMARY KEY, pad text NOT NULL); ALTER TABLE t ALTER pad SET STORAGE EXTERNAL;');
  const cpu = process.cpuUsage();
  let slowest = 0;
  for (let n = 1; n <= ROWS; n++) {
    const start = performance.now();
    await db.query('INSERT INTO t VALUES ($1::int, repeat(md5($2), 256))', [n, String(n)]);
    slowest = Math.max(slowest, performance.now() - start);
  }
  const used = process.cpuUsage(cpu);
  await db.close();
  const wal = grown.get('/pglite/data/pg_wal/xlogtemp.N') ?? { growths: 0, copied: 0 };
  const all = [...grown.values()].reduce((a, e) => ({ growths: a.growths + e.growths, copied: a.copied + e.copied }), { growths: 0, copied: 0 });
  return { label, cpuMs: (used.user + used.system) / 1000, slowest, wal, all };
}

const results = [];
for (let round = 0; round < 3; round++) {
  results.push(await run('wal_init_zero=on (PGlite default)', []));
  results.push(await run('wal_init_zero=off', ['-c', 'wal_init_zero=off']));
}
// Per variant the least of its rounds: the figures a loaded machine distorts least.
const least = (label) => {
  const mine = results.filter((r) => r.label === label);
  return { ...mine[0], cpuMs: Math.min(...mine.map((r) => r.cpuMs)), slowest: Math.min(...mine.map((r) => r.slowest)) };
};
const on = least('wal_init_zero=on (PGlite default)');
const off = least('wal_init_zero=off');
console.log(`${ROWS} one-row INSERTs of 8 KB into an in-memory PGlite (3 interleaved rounds, the least of each; the floor is wal_init_zero=off)`);
for (const r of [on, off]) {
  console.log(
    `  ${r.label.padEnd(34)} CPU ${r.cpuMs.toFixed(0)} ms (${(r.cpuMs / off.cpuMs).toFixed(2)}x), slowest INSERT ${r.slowest.toFixed(1)} ms (${(r.slowest / off.slowest).toFixed(1)}x); ` +
      `WAL segment files grown ${r.wal.growths} times (${(r.wal.copied / 1e6).toFixed(0)} MB copied), all files ${r.all.growths} (${(r.all.copied / 1e6).toFixed(0)} MB)`,
  );
}
console.log('  what is left is the table files: each growth past 1 MiB copies the whole file (upstream: MEMFS grows by an eighth)');
