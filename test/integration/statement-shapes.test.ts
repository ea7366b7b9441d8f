import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { sql } from 'kysely';
import { openStore, type Store } from '../../src/server/store/db.js';
import { StatementShapes } from '../../src/server/store/prepared.js';
import { createTestDatabase, engines } from '../support/service.js';

describe.each(engines)('statement shapes: compiled once, run with new values (%s)', (engine) => {
  let store: Store;
  let drop: (() => Promise<void>) | undefined;
  beforeAll(async () => {
    if (engine === 'postgres') {
      const database = await createTestDatabase();
      drop = database.drop;
      store = await openStore({ databaseUrl: database.url });
    } else store = await openStore({});
  });
  afterAll(async () => {
    await store?.close();
    await drop?.();
  });

  /** A statement that reads a table with its two values, counting its builds. */
  const counted = () => {
    let builds = 0;
    const build = (values: readonly unknown[]) => {
      builds++;
      return sql<{
        sum: number;
        orgs: number;
      }>`SELECT ${values[0]}::int + ${values[1]}::int AS sum, (SELECT count(*)::int FROM orgs WHERE id <> ${values[2]}) AS orgs`;
    };
    return { build, builds: () => builds };
  };

  test('a shape reused with new values gives their rows, and is built once', async () => {
    const shapes = new StatementShapes(false);
    const { build, builds } = counted();
    const first = await shapes.execute(store.db, 'sum', [1, 2, 'none'], build);
    const second = await shapes.execute(store.db, 'sum', [40, 2, 'none'], build);
    const third = await shapes.execute(store.db, 'sum', [-5, 3, 'none'], build);
    expect([first.rows[0].sum, second.rows[0].sum, third.rows[0].sum]).toEqual([3, 42, -2]);
    expect(builds()).toBe(1);
  });

  test('checked, every call is built and compared, and gives the same rows', async () => {
    const shapes = new StatementShapes(true);
    const { build, builds } = counted();
    const sums = [];
    for (const [a, b] of [
      [1, 2],
      [3, 4],
    ])
      sums.push((await shapes.execute(store.db, 'sum', [a, b, 'none'], build)).rows[0].sum);
    expect(sums).toEqual([3, 7]);
    expect(builds()).toBe(2);
  });

  test('a shape whose text varies with a value is caught by the check, naming the shape', async () => {
    const shapes = new StatementShapes(true);
    const build = (values: readonly unknown[]) =>
      values[0] === 'up' ? sql<{ n: string }>`SELECT ${values[0]}::text AS n` : sql<{ n: string }>`SELECT upper(${values[0]}::text) AS n`;
    expect((await shapes.execute(store.db, 'case', ['up'], build)).rows).toEqual([{ n: 'up' }]);
    await expect(shapes.execute(store.db, 'case', ['down'], build)).rejects.toThrow(/Statement shape case: its text changed with its values/);
    // Unchecked, the recorded text would have run with the new value.
    const unchecked = new StatementShapes(false);
    await unchecked.execute(store.db, 'case', ['up'], build);
    expect((await unchecked.execute(store.db, 'case', ['down'], build)).rows).toEqual([{ n: 'down' }]);
  });

  test('a choice that is no parameter, or values out of the text\u2019s order, are caught on the first call, checked or not', async () => {
    const shapes = new StatementShapes(false);
    const signed = (values: readonly unknown[]) => (values[0] ? sql`SELECT ${values[1]}::int AS n` : sql`SELECT -${values[1]}::int AS n`);
    await expect(shapes.execute(store.db, 'signed', [true, 5], signed)).rejects.toThrow(/Statement shape signed: its 1 parameters are not the 2 values given/);
    await expect(shapes.execute(store.db, 'order', [2, 1], () => sql`SELECT ${1}::int AS a, ${2}::int AS b`)).rejects.toThrow(
      /Statement shape order: its 2 parameters are not the 2 values given, in order/,
    );
    expect(shapes.size).toBe(0);
  });

  test('at most MAX shapes are kept: the oldest goes first and is compiled again when used', async () => {
    const shapes = new StatementShapes(false);
    const { build, builds } = counted();
    for (let i = 0; i < StatementShapes.MAX + 6; i++) await shapes.execute(store.db, `sum ${i}`, [i, 1, 'none'], build);
    expect(shapes.size).toBe(StatementShapes.MAX);
    expect(builds()).toBe(StatementShapes.MAX + 6);
    // The newest is kept (no build), the first was dropped (built again).
    expect((await shapes.execute(store.db, `sum ${StatementShapes.MAX + 5}`, [10, 1, 'none'], build)).rows[0].sum).toBe(11);
    expect(builds()).toBe(StatementShapes.MAX + 6);
    expect((await shapes.execute(store.db, 'sum 0', [20, 1, 'none'], build)).rows[0].sum).toBe(21);
    expect(builds()).toBe(StatementShapes.MAX + 7);
    expect(shapes.size).toBe(StatementShapes.MAX);
  });
});
