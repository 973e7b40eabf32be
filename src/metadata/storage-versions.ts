/**
 * The reconciler's memory (registry/indexing/reconcile.ts): for each repository, a fingerprint of
 * what storage held when the reconciler last read it whole. A pass that finds the same fingerprint
 * skips the repository. The reconciler reads and writes the table, the rebuild writes it (so the
 * reconciler's first pass after it skips what did not change); a repository that is dropped loses
 * its row, and a missing row means "read it".
 */
import type { Kysely } from 'kysely';
import type { Database } from './schema.js';

export class StorageVersions {
  constructor(private readonly db: Kysely<Database>) {}

  async get(repository: string): Promise<string | undefined> {
    return (await this.db.selectFrom('repository_versions').select('version').where('repository', '=', repository).executeTakeFirst())?.version;
  }

  /** many at once (the reconciler's batch), in the order asked */
  async getMany(repositories: readonly string[]): Promise<(string | undefined)[]> {
    const found = new Map<string, string>();
    // 1 parameter a name: well under SQLite's and PostgreSQL's limits
    for (let i = 0; i < repositories.length; i += 500) {
      const rows = await this.db.selectFrom('repository_versions').select(['repository', 'version']).where('repository', 'in', repositories.slice(i, i + 500)).execute();
      for (const row of rows) found.set(row.repository, row.version);
    }
    return repositories.map((name) => found.get(name));
  }

  async set(repository: string, version: string): Promise<void> {
    await this.db
      .insertInto('repository_versions')
      .values({ repository, version })
      .onConflict((oc) => oc.column('repository').doUpdateSet({ version }))
      .execute();
  }

  /** many at once, in one transaction (the rebuild's batch): a version undefined is forgotten */
  async setMany(entries: readonly { repository: string; version: string | undefined }[]): Promise<void> {
    const kept = entries.filter((e): e is { repository: string; version: string } => e.version !== undefined);
    const forgotten = entries.filter((e) => e.version === undefined).map((e) => e.repository);
    await this.db.transaction().execute(async (tx) => {
      // 2 parameters a row: well under SQLite's and PostgreSQL's limits
      for (let i = 0; i < kept.length; i += 500) {
        await tx
          .insertInto('repository_versions')
          .values(kept.slice(i, i + 500))
          .onConflict((oc) => oc.column('repository').doUpdateSet((eb) => ({ version: eb.ref('excluded.version') })))
          .execute();
      }
      for (let i = 0; i < forgotten.length; i += 500) await tx.deleteFrom('repository_versions').where('repository', 'in', forgotten.slice(i, i + 500)).execute();
    });
  }

  async forget(repository: string): Promise<void> {
    await this.db.deleteFrom('repository_versions').where('repository', '=', repository).execute();
  }
}
