// PGlite's own CPU per statement, with @electric-sql/pglite alone (no agentctl code): what is left of the
// server's CPU per event POST on PGlite once the project's part is cut (issue 20), and the minimal
// reproduction for an upstream report. Process CPU per call, interleaved rounds, min and median of them:
//  - query() runs the extended protocol, six calls into the wasm module per statement (Parse, Describe
//    statement, Bind, Describe portal, Execute, Sync); exec() runs the simple one, two (Query, Sync);
//  - every result is parsed with a fresh copy of the instance's type-parser table ({...this.parsers}), a
//    few hundred entries: "parsers copied" is a new instance as it comes, "parsers empty" one whose table
//    was emptied (db.parsers = {}; the module's default table still parses the built-in types);
//  - SELECT 1 is the floor; the INSERT is a prepared one-row write, EXECUTEd with literals.
import { PGlite } from '@electric-sql/pglite';

const N = Number(process.env.BENCH_PGLITE_CALLS ?? 1000);
const ROUNDS = Number(process.env.BENCH_RUNS ?? 5);

async function open(emptyParsers) {
  const db = new PGlite();
  await db.waitReady;
  if (emptyParsers) db.parsers = {};
  await db.exec(`CREATE TABLE t (id bigserial PRIMARY KEY, k text NOT NULL, v jsonb NOT NULL);
    PREPARE ins(text, jsonb) AS INSERT INTO t (k, v) VALUES ($1, $2) RETURNING id;`);
  return db;
}

const copied = await open(false);
const empty = await open(true);
let i = 0;
const variants = {};
for (const [label, db] of [
  ['parsers copied', copied],
  ['parsers empty ', empty],
]) {
  variants[`${label} query('SELECT 1')`] = () => db.query('SELECT 1 AS x');
  variants[`${label} exec('SELECT 1')`] = () => db.exec('SELECT 1 AS x');
  variants[`${label} query(INSERT, [$1, $2])`] = () => db.query('INSERT INTO t (k, v) VALUES ($1, $2) RETURNING id', [`k${i++}`, '{"a":1}']);
  variants[`${label} query('EXECUTE ins(...)')`] = () => db.query(`EXECUTE ins('k${i++}', '{"a":1}')`);
  variants[`${label} exec('EXECUTE ins(...)')`] = () => db.exec(`EXECUTE ins('k${i++}', '{"a":1}')`);
}
const results = {};
for (let r = 0; r < ROUNDS; r++) {
  for (const [name, fn] of Object.entries(variants)) {
    for (let k = 0; k < 50; k++) await fn();
    const cpu = process.cpuUsage();
    for (let k = 0; k < N; k++) await fn();
    const used = process.cpuUsage(cpu);
    (results[name] ??= []).push((used.user + used.system) / N);
  }
}
const floor = Math.min(...results["parsers empty  exec('SELECT 1')"]);
console.log(`PGlite ${(await copied.query('SHOW server_version')).rows[0].server_version}: CPU per call, ${N} calls x ${ROUNDS} interleaved rounds`);
for (const [name, xs] of Object.entries(results)) {
  const sorted = [...xs].sort((a, b) => a - b);
  console.log(
    `  ${name.padEnd(44)} min ${sorted[0].toFixed(0).padStart(4)} µs, median ${sorted[Math.floor(sorted.length / 2)].toFixed(0).padStart(4)} µs; ${(sorted[0] / floor).toFixed(1)}x the floor`,
  );
}
await copied.close();
await empty.close();
