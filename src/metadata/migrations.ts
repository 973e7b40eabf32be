/**
 * The schema's history, applied by Kysely's Migrator at open (a table `kysely_migration` records
 * what ran; the Migrator takes a lock, so several processes opening one database at once apply
 * each step once). A step is never edited once released: a change is a new step.
 */
import { Migrator, type Kysely, type Migration, type MigrationProvider } from 'kysely';
import { browseStep } from './browse-migration.js';

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

export function migrator(db: Kysely<any>, engine: Engine): Migrator {
  const provider: MigrationProvider = { getMigrations: async () => ({
      '0001_initial': initial(engine),
      '0004_browse': browseStep(engine === 'postgres'),
    }) };
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
