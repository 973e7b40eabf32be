/**
 * The index sorts names like storage, by code unit (byte order for these ASCII names), on both
 * engines: SQLite's BINARY collation does by itself; on PostgreSQL migration 0002_byte_order gives
 * the key columns COLLATE "C", so a database whose default collation is a language's (ICU en-US
 * here, as on a server initialised with en_US.UTF-8) sorts and pages `a-b`, `a.b`, `a/b`, `a0`,
 * `a_b`, `ab` the way storage lists them. An index created before the step is migrated in place.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Kysely, Migrator, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { MetadataIndex } from '../../src/metadata/metadata-index.js';
import { migrator } from '../../src/metadata/migrations.js';
import { openDatabase, type MetadataConnection } from '../../src/metadata/open.js';
import type { Database } from '../../src/metadata/schema.js';
import { needPostgres, startPostgres, type TestPostgres } from '../helpers/postgres.js';

/** repository names in code-unit order: '-' 0x2d < '.' 0x2e < '/' 0x2f < '0' 0x30 < '_' 0x5f < 'b' 0x62 */
const REPOSITORIES = ['a-b', 'a.b', 'a/b', 'a0', 'a_b', 'ab'];
/** tag names in code-unit order: upper case before '_' before lower case */
const TAGS = ['V1', '_x', 'a-b', 'a.b', 'a0', 'a_b', 'ab'];
const DIGEST = `sha256:${'1'.repeat(64)}`;

/** written in reverse, so the order of insertion cannot pass for a sort */
async function fill(index: MetadataIndex): Promise<void> {
  for (const name of [...REPOSITORIES].reverse()) await index.tagMoved(name, 'latest', DIGEST);
  for (const tag of [...TAGS].reverse()) await index.tagMoved('a/b', tag, DIGEST);
}

/** what a listing asks: the names in the database's order, and the page after `last` */
async function assertByteOrder(index: MetadataIndex): Promise<void> {
  assert.deepEqual(await index.repositoryNames(), REPOSITORIES);
  const after = await index.db.selectFrom('repositories').select('name').where('name', '>', 'a/b').orderBy('name').execute();
  assert.deepEqual(
    after.map((r) => r.name),
    ['a0', 'a_b', 'ab'],
  );
  const tags = await index.db.selectFrom('tags').select('name').where('repository', '=', 'a/b').orderBy('name').execute();
  assert.deepEqual(
    tags.map((t) => t.name),
    [...TAGS, 'latest'],
  );
  const tagsAfter = await index.db.selectFrom('tags').select('name').where('repository', '=', 'a/b').where('name', '>', '_x').orderBy('name').limit(2).execute();
  assert.deepEqual(
    tagsAfter.map((t) => t.name),
    ['a-b', 'a.b'],
  );
  // the catalog's key (storage lists component by component: '/' as \x01, below every character
  // of a name) inherits the column's collation, so it is byte order too
  const catalog = await index.db.selectFrom('repositories').select('name').orderBy(sql`replace(name, '/', ${'\x01'})`).execute();
  assert.deepEqual(
    catalog.map((r) => r.name),
    ['a/b', 'a-b', 'a.b', 'a0', 'a_b', 'ab'],
  );
  // a namespace's repositories by prefix, as usage and search ask
  const namespace = await index.db.selectFrom('repositories').select('name').where('name', 'like', 'a/%').orderBy('name').execute();
  assert.deepEqual(
    namespace.map((r) => r.name),
    ['a/b'],
  );
}

async function withIndex(connection: MetadataConnection, body: (index: MetadataIndex) => Promise<void>): Promise<void> {
  const { db, engine } = await openDatabase(connection);
  const index = new MetadataIndex(db, engine);
  try {
    await body(index);
  } finally {
    await index.close();
  }
}

describe('the index sorts by code unit on SQLite', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'berth-byte-order-'));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('repositories, tags and the page after `last` in byte order', async () => {
    await withIndex({ sqlite: { path: join(dir, 'metadata.sqlite') } }, async (index) => {
      await fill(index);
      await assertByteOrder(index);
    });
  });
});

describe('the index sorts by code unit on PostgreSQL whose default collation is a language (ICU en-US)', needPostgres(), () => {
  let postgres: TestPostgres;
  before(async () => {
    postgres = await startPostgres();
  });
  after(() => postgres?.stop());

  it('the language sorts otherwise: the test database is one where the step matters', async () => {
    const client = new pg.Client({ connectionString: await postgres.createDatabase('language', { icuLocale: 'en-US' }) });
    await client.connect();
    try {
      const { rows } = await client.query<{ name: string }>(`select name from unnest($1::text[]) as name order by name`, [REPOSITORIES]);
      assert.notDeepEqual(
        rows.map((r) => r.name),
        REPOSITORIES,
      );
    } finally {
      await client.end();
    }
  });

  it('repositories, tags and the page after `last` in byte order', async () => {
    const url = await postgres.createDatabase('fresh', { icuLocale: 'en-US' });
    await withIndex({ postgres: { url } }, async (index) => {
      await fill(index);
      await assertByteOrder(index);
    });
  });

  it('an index created before 0002_byte_order keeps its rows and sorts by code unit once opened', async () => {
    const url = await postgres.createDatabase('upgraded', { icuLocale: 'en-US' });
    const db = new Kysely<Database>({ dialect: new PostgresDialect({ pool: new pg.Pool({ connectionString: url, max: 1 }) }) });
    try {
      const step: Migrator = migrator(db, 'postgres');
      const { error } = await step.migrateTo('0001_initial');
      assert.equal(error, undefined);
      // the rows as the first release wrote them (today's MetadataIndex writes columns later steps added)
      const pushed_at = new Date(0).toISOString();
      await db.insertInto('repositories').values(REPOSITORIES.map((name) => ({ name, has_manifests: 1 }))).execute();
      await db.insertInto('tags').values(REPOSITORIES.map((repository) => ({ repository, name: 'latest', digest: DIGEST, pushed_at }))).execute();
      await db.insertInto('tags').values(TAGS.map((name) => ({ repository: 'a/b', name, digest: DIGEST, pushed_at }))).execute();
    } finally {
      await db.destroy();
    }
    await withIndex({ postgres: { url } }, async (index) => {
      await assertByteOrder(index);
      assert.deepEqual((await index.readRepository('a/b'))?.tags.length, TAGS.length + 1);
    });
  });
});
