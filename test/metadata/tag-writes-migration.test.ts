/**
 * Step 0009_tag_writes (src/metadata/tag-writes-migration.ts) on both engines: `tags_by_digest`
 * is gone and the lookups of a repository's tags by digest still read an index
 * (`tags_by_digest_name`); a tag the rebuild writes with its manifest's figures holds what the
 * triggers give a tag written without them (the request path's, and a part of tags alone); a
 * SQLite database at step 0008 with rows keeps them through the step.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import SQLite from 'better-sqlite3';
import { Kysely, sql, SqliteDialect } from 'kysely';
import { openMetadataIndex } from '../../src/features/metadata.js';
import type { MetadataIndex } from '../../src/metadata/metadata-index.js';
import { migrator } from '../../src/metadata/migrations.js';
import type { ManifestRecord } from '../../src/metadata/records.js';
import { needPostgres, startPostgres, type TestPostgres } from '../helpers/postgres.js';

let dir: string;
let counter = 0;
let pg: TestPostgres | undefined;

const ENGINES: { name: string; options: { skip: string | false }; open(): Promise<MetadataIndex>; start?(): Promise<void>; stop?(): Promise<void> }[] = [
  { name: 'SQLite', options: { skip: false }, open: () => openMetadataIndex({ storage: {}, metadata: { enabled: true, sqlite: { path: join(dir, `index-${++counter}.sqlite`) } } }) },
  {
    name: 'PostgreSQL',
    options: needPostgres(),
    open: async () => openMetadataIndex({ storage: {}, metadata: { enabled: true, postgres: { url: await pg!.createDatabase(`tag_writes_${++counter}`) } } }),
    start: async () => {
      pg = await startPostgres();
    },
    stop: async () => {
      await pg?.stop();
      pg = undefined;
    },
  },
];

const manifest = (repository: string, digest: string, extra: Partial<ManifestRecord> = {}): ManifestRecord => ({
  repository,
  digest,
  mediaType: 'application/vnd.oci.image.manifest.v1+json',
  size: 512,
  configDigest: 'sha256:' + 'c'.repeat(64),
  platforms: [{ os: 'linux', architecture: 'arm64', variant: 'v8' }],
  labels: { team: 'core' },
  annotations: {},
  subject: null,
  pushed: '2026-11-01T00:00:00.000Z',
  imageSize: 4096,
  created: '2026-10-01T00:00:00.000Z',
  ...extra,
});

const A = 'sha256:' + 'a'.repeat(64);
const B = 'sha256:' + 'b'.repeat(64);
const MISSING = 'sha256:' + 'd'.repeat(64);

/** a repository's tags with every column but the push time, by name */
async function tagRows(index: MetadataIndex, repository: string) {
  const rows = await index.db.selectFrom('tags').selectAll().where('repository', '=', repository).orderBy('name').execute();
  return rows.map(({ repository: _, pushed_at: __, ...row }) => ({ ...row, manifest_size: Number(row.manifest_size), image_size: row.image_size === null ? null : Number(row.image_size) }));
}

/** the repository's figures the triggers keep */
async function figures(index: MetadataIndex, repository: string) {
  const row = await index.db.selectFrom('repositories').select(['tag_count', 'last_pushed_at', 'total_size']).where('name', '=', repository).executeTakeFirstOrThrow();
  return { tags: Number(row.tag_count), last: row.last_pushed_at, size: Number(row.total_size) };
}

/** the lookups of a repository's tags by digest: browse.ts's and manifestRemoved's select, the manifest triggers' update */
const DIGEST_LOOKUPS = [
  sql`select name from tags where repository = ${'r'} and digest = ${A} order by name`,
  sql`update tags set manifest_size = 1 where repository = ${'r'} and digest = ${A}`,
];

/** the plan of `query` */
async function plan(index: MetadataIndex, query: (typeof DIGEST_LOOKUPS)[number]): Promise<string> {
  if (index.engine === 'sqlite') {
    const { rows } = await sql<{ detail: string }>`explain query plan ${query}`.execute(index.db);
    return rows.map((r) => r.detail).join('\n');
  }
  // a handful of rows: the planner would scan the table whatever indexes there are
  return index.db.connection().execute(async (db) => {
    await sql`set enable_seqscan = off`.execute(db);
    const { rows } = await sql<{ 'QUERY PLAN': string }>`explain ${query}`.execute(db);
    await sql`reset enable_seqscan`.execute(db);
    return rows.map((r) => r['QUERY PLAN']).join('\n');
  });
}

async function indexNames(index: MetadataIndex): Promise<string[]> {
  const { rows } =
    index.engine === 'sqlite'
      ? await sql<{ name: string }>`select name from sqlite_master where type = 'index' and tbl_name = 'tags'`.execute(index.db)
      : await sql<{ name: string }>`select indexname as name from pg_indexes where tablename = 'tags'`.execute(index.db);
  return rows.map((r) => r.name).sort();
}

for (const engine of ENGINES) {
  describe(`migration 0009_tag_writes on ${engine.name}`, engine.options, () => {
    before(async () => {
      dir = await mkdtemp(join(tmpdir(), 'berth-tag-writes-'));
      await engine.start?.();
    });
    after(async () => {
      await engine.stop?.();
      await rm(dir, { recursive: true, force: true });
    });

    it('drops tags_by_digest; a lookup of tags by digest reads tags_by_digest_name', async () => {
      const index = await engine.open();
      try {
        const names = await indexNames(index);
        assert.ok(!names.includes('tags_by_digest'), `tags_by_digest is still there: ${names.join(', ')}`);
        assert.ok(names.includes('tags_by_digest_name'));
        for (const query of DIGEST_LOOKUPS) assert.match(await plan(index, query), /tags_by_digest_name/);
      } finally {
        await index.close();
      }
    });

    it("a tag the rebuild writes with its manifest's figures holds what the triggers give one written without them", async () => {
      const index = await engine.open();
      try {
        const m = (repository: string) => [manifest(repository, A), manifest(repository, B, { mediaType: 'application/vnd.docker.distribution.manifest.v2+json', size: 700, platforms: [], imageSize: null, created: null })];
        const tags = [
          { name: 'a1', digest: A, pushed: '2026-11-02T00:00:00.000Z' },
          { name: 'a2', digest: A, pushed: '2026-11-03T00:00:00.000Z' },
          { name: 'b', digest: B, pushed: '2026-11-04T00:00:00.000Z' },
          { name: 'gone', digest: MISSING, pushed: '2026-11-05T00:00:00.000Z' },
        ];
        // the rebuild's batch: manifests and tags together (figures written by the insert)
        await index.replaceRepositories([{ facts: { name: 'rebuilt', manifests: m('rebuilt'), tags, blobs: [] }, hasManifests: true }]);
        // the request path: each manifest stored with its tags (figures written by the triggers)
        const [ma, mb] = m('pushed');
        await index.manifestStored(ma, ['a1', 'a2']);
        await index.manifestStored(mb, ['b']);
        await index.tagMoved('pushed', 'gone', MISSING);
        // a big repository's parts: the manifests, then the tags without them
        await index.replaceRepositories([{ facts: { name: 'parts', manifests: m('parts'), tags: [], blobs: [] }, hasManifests: true, part: { manifests: {} } }]);
        await index.replaceRepositories([{ facts: { name: 'parts', manifests: [], tags, blobs: [] }, hasManifests: true, part: { tags: {} } }]);

        const expected = await tagRows(index, 'pushed');
        assert.deepEqual(expected.map((t) => [t.name, t.manifest_size, t.media_type, t.platform_names]), [
          ['a1', 512, 'application/vnd.oci.image.manifest.v1+json', 'linux/arm64/v8'],
          ['a2', 512, 'application/vnd.oci.image.manifest.v1+json', 'linux/arm64/v8'],
          ['b', 700, 'application/vnd.docker.distribution.manifest.v2+json', null],
          ['gone', 0, null, null],
        ]);
        assert.deepEqual(await tagRows(index, 'rebuilt'), expected);
        assert.deepEqual(await tagRows(index, 'parts'), expected);
        // the repository's own figures are still counted per tag
        assert.deepEqual(await figures(index, 'rebuilt'), { tags: 4, last: '2026-11-05T00:00:00.000Z', size: 1212 });
        assert.deepEqual(await figures(index, 'parts'), await figures(index, 'rebuilt'));
      } finally {
        await index.close();
      }
    });
  });
}

describe('migration 0009_tag_writes over a SQLite database with rows', () => {
  it('keeps the rows, and the triggers still fill a tag written without its figures', async () => {
    const tmp = await mkdtemp(join(tmpdir(), 'berth-tag-writes-upgrade-'));
    try {
      const path = join(tmp, 'index.sqlite');
      const old = new Kysely<any>({ dialect: new SqliteDialect({ database: new SQLite(path) }) });
      assert.equal((await migrator(old, 'sqlite').migrateTo('0008_audit')).error, undefined);
      await old.insertInto('repositories').values({ name: 'r', has_manifests: 1 }).execute();
      await old.insertInto('manifests').values({ repository: 'r', digest: A, media_type: 'application/vnd.oci.image.manifest.v1+json', size: 512, platforms: '[]', labels: '{}', annotations: '{}', pushed_at: '2026-11-01T00:00:00.000Z' }).execute();
      await old.insertInto('tags').values({ repository: 'r', name: 'old', digest: A, pushed_at: '2026-11-01T00:00:00.000Z' }).execute();
      await old.destroy();

      const index = await openMetadataIndex({ storage: {}, metadata: { enabled: true, sqlite: { path } } });
      try {
        assert.ok(!(await indexNames(index)).includes('tags_by_digest'));
        await index.tagMoved('r', 'new', A);
        assert.deepEqual(
          (await tagRows(index, 'r')).map((t) => [t.name, t.manifest_size, t.media_type]),
          [
            ['new', 512, 'application/vnd.oci.image.manifest.v1+json'],
            ['old', 512, 'application/vnd.oci.image.manifest.v1+json'],
          ],
        );
        assert.equal((await figures(index, 'r')).tags, 2);
      } finally {
        await index.close();
      }
    } finally {
      await rm(tmp, { recursive: true, force: true });
    }
  });
});
