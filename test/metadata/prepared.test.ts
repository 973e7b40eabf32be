/**
 * PreparedQuery (src/metadata/prepared.ts): a query Kysely built and compiled once runs with each
 * call's values and the query's own constants, on a real SQLite database; a value the builder did
 * not turn into a parameter is refused when the query is prepared, not answered wrongly later.
 * PreparedRows likewise for a statement over many rows, compiled once per number of rows.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { sql } from 'kysely';
import { openDatabase, type OpenedDatabase } from '../../src/metadata/open.js';
import { PreparedQuery, PreparedRows } from '../../src/metadata/prepared.js';

const dir = await mkdtemp(join(tmpdir(), 'berth-prepared-'));
const opened: OpenedDatabase[] = [];
after(async () => {
  for (const { db } of opened) await db.destroy();
  await rm(dir, { recursive: true, force: true });
});

async function fresh(): Promise<OpenedDatabase> {
  const database = await openDatabase({ sqlite: { path: join(dir, `index-${opened.length}.sqlite`) } });
  opened.push(database);
  return database;
}

describe('PreparedQuery', () => {
  it("runs with each call's values, in the places they were given, and keeps the query's constants", async () => {
    const { db } = await fresh();
    const insert = new PreparedQuery(['name', 'digest'], ({ name, digest }) =>
      // `pushed_at` is a constant of the query; `digest` is used twice (value and conflict update)
      db
        .insertInto('tags')
        .values({ repository: name, name: 'latest', digest, pushed_at: '2026-01-01T00:00:00.000Z' })
        .onConflict((oc) => oc.columns(['repository', 'name']).doUpdateSet({ digest })),
    );
    const select = new PreparedQuery(['name'], ({ name }) => db.selectFrom('tags').select(['name', 'digest', 'pushed_at']).where('repository', '=', name));
    await insert.run(db, { name: 'a', digest: 'sha256:1' });
    await insert.run(db, { name: 'b', digest: 'sha256:2' });
    await db.transaction().execute((tx) => insert.run(tx, { name: 'a', digest: 'sha256:3' }));
    assert.deepEqual((await select.run(db, { name: 'a' })).rows, [{ name: 'latest', digest: 'sha256:3', pushed_at: '2026-01-01T00:00:00.000Z' }]);
    assert.deepEqual((await select.run(db, { name: 'b' })).rows, [{ name: 'latest', digest: 'sha256:2', pushed_at: '2026-01-01T00:00:00.000Z' }]);
  });

  it('refuses a value the builder did not make a parameter of', async () => {
    const { db } = await fresh();
    assert.throws(
      () => new PreparedQuery(['name', 'unused'], ({ name }) => db.selectFrom('tags').select('digest').where('repository', '=', name)),
      /unused did not become parameters/,
    );
    // a value written into the SQL text (sql.lit) is no parameter either
    assert.throws(() => new PreparedQuery(['name'], ({ name }) => db.selectFrom('tags').select('digest').where('repository', '=', sql.lit(name))), /name did not become parameters/);
  });
});

describe('PreparedRows', () => {
  it("runs with each call's rows, whatever their number, and keeps the query's constants", async () => {
    const { db } = await fresh();
    const insert = new PreparedRows(['name', 'digest'], (rows) =>
      db
        .insertInto('tags')
        .values(rows.map(({ name, digest }) => ({ repository: 'r', name, digest, pushed_at: '2026-01-01T00:00:00.000Z' })))
        .onConflict((oc) => oc.columns(['repository', 'name']).doUpdateSet((eb) => ({ digest: eb.ref('excluded.digest') }))),
    );
    await insert.run(db, [
      { name: 'a', digest: 'sha256:1' },
      { name: 'b', digest: 'sha256:2' },
    ]);
    await db.transaction().execute((tx) => insert.run(tx, [{ name: 'c', digest: 'sha256:3' }]));
    // the two-row statement again, with other rows (one already there: updated)
    await insert.run(db, [
      { name: 'a', digest: 'sha256:4' },
      { name: 'd', digest: 'sha256:5' },
    ]);
    const rows = await db.selectFrom('tags').select(['name', 'digest', 'pushed_at']).where('repository', '=', 'r').orderBy('name').execute();
    assert.deepEqual(
      rows.map((r) => [r.name, r.digest, r.pushed_at]),
      [
        ['a', 'sha256:4', '2026-01-01T00:00:00.000Z'],
        ['b', 'sha256:2', '2026-01-01T00:00:00.000Z'],
        ['c', 'sha256:3', '2026-01-01T00:00:00.000Z'],
        ['d', 'sha256:5', '2026-01-01T00:00:00.000Z'],
      ],
    );
  });

  it('refuses a column the builder did not make a parameter of', async () => {
    const { db } = await fresh();
    const insert = new PreparedRows(['name', 'unused'], (rows) => db.insertInto('tags').values(rows.map(({ name }) => ({ repository: 'r', name, digest: 'd', pushed_at: 't' }))));
    await assert.rejects(async () => insert.run(db, [{ name: 'a', unused: 1 }]), /not every value became a parameter/);
  });
});
