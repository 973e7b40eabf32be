/**
 * What the quotas read from the index (src/policies/quota.ts): the repositories that hold
 * manifests, the distinct manifests of a set of repositories with their bytes, and the stored
 * size of blobs. The quota's scope is a set of globs, matched in the policies room.
 */
import type { Kysely } from 'kysely';
import { REBUILT_KEY } from './metadata-index.js';
import type { Database } from './schema.js';

/** names or digests per IN list */
const PER_QUERY = 500;

export class QuotaReads {
  /** seen built once: stays so */
  private built = false;

  constructor(private readonly db: Kysely<Database>) {}

  /** the index holds all of storage (its first build finished): until then a use read from it would be short */
  async isBuilt(): Promise<boolean> {
    this.built ||= (await this.db.selectFrom('index_state').select('key').where('key', '=', REBUILT_KEY).executeTakeFirst()) !== undefined;
    return this.built;
  }

  /**
   * every repository that holds a manifest now (one holding only blob links is a push in progress;
   * one whose manifests were all deleted stays in the catalog but no longer counts)
   */
  async repositoriesWithManifests(): Promise<string[]> {
    return (await this.db.selectFrom('manifests').select('repository').distinct().execute()).map((r) => r.repository);
  }

  /** the distinct manifests of these repositories and their bytes */
  async manifests(names: readonly string[]): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    for (let i = 0; i < names.length; i += PER_QUERY) {
      const rows = await this.db.selectFrom('manifests').select(['digest', 'size']).where('repository', 'in', names.slice(i, i + PER_QUERY)).execute();
      for (const r of rows) out.set(r.digest, Math.max(out.get(r.digest) ?? 0, Number(r.size)));
    }
    return out;
  }

  /** the stored sizes of these blobs (a digest the index does not know is left out) */
  async blobSizes(digests: readonly string[]): Promise<Map<string, number>> {
    const out = new Map<string, number>();
    for (let i = 0; i < digests.length; i += PER_QUERY) {
      const rows = await this.db.selectFrom('blobs').select(['digest', 'size']).where('digest', 'in', digests.slice(i, i + PER_QUERY)).execute();
      for (const r of rows) out.set(r.digest, Number(r.size));
    }
    return out;
  }
}
