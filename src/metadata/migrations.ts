/**
 * The schema's history, applied by Kysely's Migrator at open (a table `kysely_migration` records
 * what ran; the Migrator takes a lock, so several processes opening one database at once apply
 * each step once). A step is never edited once released: a change is a new step.
 */
import { Migrator, sql, type Kysely, type Migration, type MigrationProvider } from 'kysely';
import { apiTokensStep } from './api-tokens-migration.js';
import { browseStep } from './browse-migration.js';
import { figuresStep } from './figures-migration.js';
import { auditStep } from './audit-migration.js';
import { tagWritesStep } from './tag-writes-migration.js';

export type Engine = 'sqlite' | 'postgres';

function initial(engine: Engine): Migration {
  // sizes exceed 32 bits; SQLite's integer is 64 bits already
  const big = engine === 'postgres' ? 'bigint' : 'integer';
  return {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('repositories')
        .addColumn('name', 'text', (c) => c.primaryKey())
        .addColumn('has_manifests', 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema
        .createTable('manifests')
        .addColumn('repository', 'text', (c) => c.notNull())
        .addColumn('digest', 'text', (c) => c.notNull())
        .addColumn('media_type', 'text', (c) => c.notNull())
        .addColumn('size', big, (c) => c.notNull())
        .addColumn('config_digest', 'text')
        .addColumn('platforms', 'text', (c) => c.notNull())
        .addColumn('labels', 'text', (c) => c.notNull())
        .addColumn('annotations', 'text', (c) => c.notNull())
        .addColumn('subject', 'text')
        .addColumn('pushed_at', 'text', (c) => c.notNull())
        .addColumn('pull_count', big, (c) => c.notNull().defaultTo(0))
        .addColumn('last_pulled_at', 'text')
        .addPrimaryKeyConstraint('manifests_pk', ['repository', 'digest'])
        .execute();
      await db.schema.createIndex('manifests_by_digest').on('manifests').column('digest').execute();
      await db.schema.createIndex('manifests_by_subject').on('manifests').columns(['repository', 'subject']).execute();
      await db.schema
        .createTable('tags')
        .addColumn('repository', 'text', (c) => c.notNull())
        .addColumn('name', 'text', (c) => c.notNull())
        .addColumn('digest', 'text', (c) => c.notNull())
        .addColumn('pushed_at', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('tags_pk', ['repository', 'name'])
        .execute();
      await db.schema.createIndex('tags_by_digest').on('tags').columns(['repository', 'digest']).execute();
      await db.schema
        .createTable('tag_history')
        .addColumn('repository', 'text', (c) => c.notNull())
        .addColumn('tag', 'text', (c) => c.notNull())
        .addColumn('digest', 'text', (c) => c.notNull())
        .addColumn('from_at', 'text', (c) => c.notNull())
        .addColumn('to_at', 'text')
        .addColumn('pushed_by', 'text')
        .addPrimaryKeyConstraint('tag_history_pk', ['repository', 'tag', 'from_at', 'digest'])
        .execute();
      await db.schema
        .createTable('blobs')
        .addColumn('digest', 'text', (c) => c.primaryKey())
        .addColumn('size', big, (c) => c.notNull())
        .execute();
      await db.schema
        .createTable('repository_blobs')
        .addColumn('repository', 'text', (c) => c.notNull())
        .addColumn('digest', 'text', (c) => c.notNull())
        .addPrimaryKeyConstraint('repository_blobs_pk', ['repository', 'digest'])
        .execute();
      await db.schema.createIndex('repository_blobs_by_digest').on('repository_blobs').column('digest').execute();
      await db.schema.createTable('index_state').addColumn('key', 'text', (c) => c.primaryKey()).addColumn('value', 'text', (c) => c.notNull()).execute();
    },
  };
}

/**
 * The text columns that are compared, sorted, joined or matched by prefix (names, digests, times):
 * every one a listing may sort or page by, whichever table a query starts from (a comparison of a
 * "C" column with a default one is made in "C", but a sort on the default one alone would be the
 * locale's). JSON documents (platforms, labels, annotations) and `index_state.value` are not.
 */
export const BYTE_ORDER_COLUMNS: Record<string, string[]> = {
  repositories: ['name'],
  manifests: ['repository', 'digest', 'media_type', 'config_digest', 'subject', 'pushed_at', 'last_pulled_at'],
  tags: ['repository', 'name', 'digest', 'pushed_at'],
  tag_history: ['repository', 'tag', 'digest', 'from_at', 'to_at', 'pushed_by'],
  blobs: ['digest'],
  repository_blobs: ['repository', 'digest'],
  index_state: ['key'],
};

/**
 * Listings sort like storage: by code unit, which for these ASCII names is byte order (`a-b` <
 * `a.b` < `a/b` < `a0` < `a_b` < `ab`, `V1` < `a`). SQLite's default collation (BINARY) does;
 * PostgreSQL's default is the database's locale (en_US, ICU), which orders by language rules and
 * would make `_catalog`'s order and its `last` pagination differ from storage's and between
 * engines. "C" is byte order, and lets a btree index serve `LIKE 'team/%'`. New text key
 * columns of later steps take `textKey(engine)`.
 */
function byteOrder(engine: Engine): Migration {
  return {
    async up(db: Kysely<any>) {
      if (engine !== 'postgres') return;
      for (const [table, columns] of Object.entries(BYTE_ORDER_COLUMNS)) {
        const alters = columns.map((column) => sql`alter column ${sql.ref(column)} type text collate "C"`);
        await sql`alter table ${sql.table(table)} ${sql.join(alters)}`.execute(db);
      }
    },
  };
}

/**
 * The listings' step: the catalog's keyset index, in storage's order (component by component, so
 * `a/b` before `a-b`: '/' is replaced by \x01, below every character of a name; listings.ts
 * queries this same expression), over the repositories the catalog lists only; and the count of
 * the request path's writes to a repository, which a rebuild running while berth serves checks so
 * it never overwrites a write it did not read (metadata-index.ts).
 */
function listings(engine: Engine): Migration {
  return {
    async up(db: Kysely<any>) {
      await db.schema
        .alterTable('repositories')
        .addColumn('changes', engine === 'postgres' ? 'bigint' : 'integer', (c) => c.notNull().defaultTo(0))
        .execute();
      await db.schema
        .createIndex('repositories_catalog_order')
        .on('repositories')
        .expression(sql.raw("replace(name, '/', '\x01')"))
        .where(sql<boolean>`has_manifests = 1`)
        .execute();
    },
  };
}

/** the type of a text column that is compared or sorted: byte order on both engines (see `byteOrder`) */
export function textKey(engine: Engine) {
  return engine === 'postgres' ? sql`text collate "C"` : sql`text`;
}

/** the reconciler's record of what each repository looked like in storage when it last read it (registry/indexing/reconcile.ts) */
function storageVersions(engine: Engine): Migration {
  return {
    async up(db: Kysely<any>) {
      await db.schema
        .createTable('repository_versions')
        .addColumn('repository', textKey(engine), (c) => c.primaryKey())
        .addColumn('version', 'text', (c) => c.notNull())
        .execute();
    },
  };
}

export function migrator(db: Kysely<any>, engine: Engine): Migrator {
  const provider: MigrationProvider = {
    getMigrations: async () => ({
      '0001_initial': initial(engine),
      '0002_byte_order': byteOrder(engine),
      '0003_listings': listings(engine),
      '0004_browse': browseStep(engine === 'postgres'),
      '0005_repository_versions': storageVersions(engine),
      '0006_image_figures': figuresStep(engine === 'postgres'),
      '0007_api_tokens': apiTokensStep(engine === 'postgres'),
      '0008_audit': auditStep(engine === 'postgres'),
      '0009_tag_writes': tagWritesStep(engine === 'postgres'),
    }),
  };
  return new Migrator({ db, provider });
}

/** applies every step not applied yet; throws with the failing step's error */
export async function migrateToLatest(db: Kysely<any>, engine: Engine): Promise<void> {
  const { error, results } = await migrator(db, engine).migrateToLatest();
  if (error) {
    const failed = results?.find((r) => r.status === 'Error')?.migrationName;
    throw new Error(`the metadata database's migration ${failed ?? ''} failed: ${(error as Error).message ?? error}`);
  }
}
