/**
 * The reconciler's memory (registry/indexing/reconcile.ts): for each repository, a fingerprint of
 * what storage held when the reconciler last read it whole. A pass that finds the same fingerprint
 * skips the repository. Only the reconciler reads and writes the table; a repository that is
 * dropped loses its row, and a missing row means "read it".
 */
import type { Kysely } from 'kysely';
import type { Database } from './schema.js';

export class StorageVersions {
  constructor(private readonly db: Kysely<Database>) {}

  async get(repository: string): Promise<string | undefined> {
    return (await this.db.selectFrom('repository_versions').select('version').where('repository', '=', repository).executeTakeFirst())?.version;
  }

  async set(repository: string, version: string): Promise<void> {
    await this.db
      .insertInto('repository_versions')
      .values({ repository, version })
      .onConflict((oc) => oc.column('repository').doUpdateSet({ version }))
      .execute();
  }

  async forget(repository: string): Promise<void> {
    await this.db.deleteFrom('repository_versions').where('repository', '=', repository).execute();
  }
}
