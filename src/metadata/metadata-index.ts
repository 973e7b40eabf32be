/**
 * The index's reads and writes, the same code on SQLite and PostgreSQL (Kysely builds each
 * dialect's SQL). Every write is idempotent: the core calls it after storage was written, and a
 * request retried, or a rebuild run over it, leaves the same rows.
 *
 * Every transaction begins with a write to the repository's row (`claim`): on PostgreSQL that
 * row lock serialises the writers of one repository (a tag's history is read, then written); on
 * SQLite the first statement takes the database's write lock, so a second process waits for it
 * (busy timeout) instead of failing as a transaction that read first and then wants to write does.
 */
import type { Kysely, Selectable, Transaction } from 'kysely';
import type { Engine } from './migrations.js';
import type { BlobLinkRecord, ManifestRecord, RepositoryFacts, TagHistoryRecord, TagRecord } from './records.js';
import type { Database, ManifestsTable } from './schema.js';

/** rows per INSERT and keys per IN list: well under both engines' bound on parameters */
const BATCH = 200;

/** index_state: when the last rebuild finished (ISO time) */
export const REBUILT_KEY = 'rebuilt';

type Tx = Transaction<Database>;

export class MetadataIndex {
  constructor(
    readonly db: Kysely<Database>,
    readonly engine: Engine,
    private readonly now: () => number = Date.now,
  ) {}

  private time(): string {
    return new Date(this.now()).toISOString();
  }

  // writes of the request path (registry/index-sink.ts)

  async manifestStored(record: ManifestRecord): Promise<void> {
    await this.db.transaction().execute(async (tx) => {
      await claim(tx, record.repository, true);
      await upsertManifests(tx, [record]);
    });
  }

  async manifestRemoved(repository: string, digest: string): Promise<void> {
    await this.db.transaction().execute(async (tx) => {
      await claim(tx, repository, true);
      const at = this.time();
      const tags = await tx.selectFrom('tags').select('name').where('repository', '=', repository).where('digest', '=', digest).execute();
      for (const { name } of tags) await removeTag(tx, repository, name, at);
      await tx.deleteFrom('manifests').where('repository', '=', repository).where('digest', '=', digest).execute();
    });
  }

  async tagMoved(repository: string, tag: string, digest: string, pushedBy?: string): Promise<void> {
    await this.db.transaction().execute(async (tx) => {
      await claim(tx, repository, true);
      await moveTag(tx, repository, { name: tag, digest, pushed: this.time() }, pushedBy ?? null);
    });
  }

  async tagRemoved(repository: string, tag: string): Promise<void> {
    await this.db.transaction().execute(async (tx) => {
      await claim(tx, repository, true);
      await removeTag(tx, repository, tag, this.time());
    });
  }

  async blobLinked(repository: string, digest: string, size: number): Promise<void> {
    await this.db.transaction().execute(async (tx) => {
      await claim(tx, repository, false);
      await linkBlobs(tx, [{ repository, digest, size }]);
    });
  }

  /** the link goes; the blob's row stays until a rebuild (another repository may link it meanwhile) */
  async blobUnlinked(repository: string, digest: string): Promise<void> {
    await this.db.deleteFrom('repository_blobs').where('repository', '=', repository).where('digest', '=', digest).execute();
  }

  // the rebuild's writes

  /**
   * makes the repository's rows what storage holds: manifests, tags and links not in `facts` go,
   * the others are written; a tag that moved or went closes its history entry and a new one opens
   * at the tag's time. `hasManifests`: the repository has `_manifests` (the catalog lists it).
   */
  async replaceRepository(facts: RepositoryFacts, hasManifests: boolean): Promise<void> {
    await this.replaceRepositories([{ facts, hasManifests }]);
  }

  /**
   * replaceRepository for several repositories in one transaction, set by set rather than
   * repository by repository (the rebuild writes thousands of rows per call: a commit, or a
   * statement, per repository would cost more than the rows)
   */
  async replaceRepositories(batch: { facts: RepositoryFacts; hasManifests: boolean }[]): Promise<void> {
    if (batch.length === 0) return;
    await this.db.transaction().execute(async (tx) => {
      const at = this.time();
      const names = batch.map((b) => b.facts.name);
      for (const chunk of chunks(batch)) {
        await tx
          .insertInto('repositories')
          .values(chunk.map((b) => ({ name: b.facts.name, has_manifests: b.hasManifests ? 1 : 0 })))
          .onConflict((oc) => oc.column('name').doUpdateSet((eb) => ({ has_manifests: eb.ref('excluded.has_manifests') })))
          .execute();
      }

      const indexedManifests = await rowsOf(names, (part) => tx.selectFrom('manifests').select(['repository', 'digest']).where('repository', 'in', part).execute());
      const manifests = batch.flatMap((b) => b.facts.manifests);
      for (const { facts } of batch) {
        const wanted = new Set(facts.manifests.map((m) => m.digest));
        const stale = (indexedManifests.get(facts.name) ?? []).map((r) => r.digest).filter((d) => !wanted.has(d));
        for (const chunk of chunks(stale)) await tx.deleteFrom('manifests').where('repository', '=', facts.name).where('digest', 'in', chunk).execute();
      }
      await upsertManifests(tx, manifests);

      const indexedTags = await rowsOf(names, (part) => tx.selectFrom('tags').select(['repository', 'name', 'digest']).where('repository', 'in', part).execute());
      const openHistory = await rowsOf(names, (part) => tx.selectFrom('tag_history').select(['repository', 'tag']).where('repository', 'in', part).where('to_at', 'is', null).execute());
      const moved: { repository: string; tag: TagRecord }[] = [];
      for (const { facts } of batch) {
        const tags = new Set(facts.tags.map((t) => t.name));
        const indexed = new Map((indexedTags.get(facts.name) ?? []).map((r) => [r.name, r.digest]));
        for (const name of indexed.keys()) if (!tags.has(name)) await removeTag(tx, facts.name, name, at);
        // a tag whose digest changed (or that is new) closes its open entry and opens one at the tag's time
        const changed = facts.tags.filter((t) => indexed.get(t.name) !== t.digest);
        const open = new Set((openHistory.get(facts.name) ?? []).map((r) => r.tag));
        for (const chunk of chunks(changed.filter((t) => open.has(t.name)))) {
          await tx.updateTable('tag_history').set({ to_at: at }).where('repository', '=', facts.name).where('tag', 'in', chunk.map((t) => t.name)).where('to_at', 'is', null).execute();
        }
        for (const tag of changed) moved.push({ repository: facts.name, tag });
      }
      for (const chunk of chunks(moved)) {
        await tx
          .insertInto('tag_history')
          .values(chunk.map(({ repository, tag }) => ({ repository, tag: tag.name, digest: tag.digest, from_at: tag.pushed, to_at: null, pushed_by: null })))
          .onConflict((oc) => oc.columns(['repository', 'tag', 'from_at', 'digest']).doUpdateSet({ to_at: null }))
          .execute();
      }
      for (const chunk of chunks(batch.flatMap((b) => b.facts.tags.map((t) => ({ repository: b.facts.name, name: t.name, digest: t.digest, pushed_at: t.pushed }))))) {
        await tx
          .insertInto('tags')
          .values(chunk)
          .onConflict((oc) => oc.columns(['repository', 'name']).doUpdateSet((eb) => ({ digest: eb.ref('excluded.digest'), pushed_at: eb.ref('excluded.pushed_at') })))
          .execute();
      }

      const indexedLinks = await rowsOf(names, (part) => tx.selectFrom('repository_blobs').select(['repository', 'digest']).where('repository', 'in', part).execute());
      for (const { facts } of batch) {
        const links = new Set(facts.blobs.map((b) => b.digest));
        const unlinked = (indexedLinks.get(facts.name) ?? []).map((r) => r.digest).filter((d) => !links.has(d));
        for (const chunk of chunks(unlinked)) await tx.deleteFrom('repository_blobs').where('repository', '=', facts.name).where('digest', 'in', chunk).execute();
      }
      await linkBlobs(tx, batch.flatMap((b) => b.facts.blobs.map((blob) => ({ repository: b.facts.name, ...blob }))));
    });
  }

  /** a repository storage no longer has: its rows go, its tags' history is closed and kept */
  async dropRepository(name: string): Promise<void> {
    await this.db.transaction().execute(async (tx) => {
      const at = this.time();
      await tx.updateTable('tag_history').set({ to_at: at }).where('repository', '=', name).where('to_at', 'is', null).execute();
      await tx.deleteFrom('tags').where('repository', '=', name).execute();
      await tx.deleteFrom('manifests').where('repository', '=', name).execute();
      await tx.deleteFrom('repository_blobs').where('repository', '=', name).execute();
      await tx.deleteFrom('repositories').where('name', '=', name).execute();
    });
  }

  /** blob rows no repository links any more (after a rebuild) */
  async dropUnlinkedBlobs(): Promise<void> {
    await this.db
      .deleteFrom('blobs')
      .where(({ not, exists, selectFrom }) => not(exists(selectFrom('repository_blobs').select('repository_blobs.digest').whereRef('repository_blobs.digest', '=', 'blobs.digest'))))
      .execute();
  }

  // reads

  /** every repository in the index, by name (code-unit order) */
  async repositoryNames(): Promise<string[]> {
    const rows = await this.db.selectFrom('repositories').select('name').execute();
    return rows.map((r) => r.name).sort(byCodeUnit);
  }

  /** the repository's rows as records, sorted (manifests and links by digest, tags by name); undefined when it has no row */
  async readRepository(name: string): Promise<(RepositoryFacts & { hasManifests: boolean }) | undefined> {
    const repository = await this.db.selectFrom('repositories').selectAll().where('name', '=', name).executeTakeFirst();
    if (!repository) return undefined;
    const [manifests, tags, blobs] = await Promise.all([
      this.db.selectFrom('manifests').selectAll().where('repository', '=', name).execute(),
      this.db.selectFrom('tags').selectAll().where('repository', '=', name).execute(),
      this.db
        .selectFrom('repository_blobs')
        .innerJoin('blobs', 'blobs.digest', 'repository_blobs.digest')
        .select(['blobs.digest', 'blobs.size'])
        .where('repository_blobs.repository', '=', name)
        .execute(),
    ]);
    return {
      name,
      hasManifests: Number(repository.has_manifests) === 1,
      manifests: manifests.map(manifestRecord).sort((a, b) => byCodeUnit(a.digest, b.digest)),
      tags: tags.map((t): TagRecord => ({ name: t.name, digest: t.digest, pushed: t.pushed_at })).sort((a, b) => byCodeUnit(a.name, b.name)),
      blobs: blobs.map((b): BlobLinkRecord => ({ digest: b.digest, size: Number(b.size) })).sort((a, b) => byCodeUnit(a.digest, b.digest)),
    };
  }

  /** what the tag named, oldest first */
  async tagHistory(repository: string, tag: string): Promise<TagHistoryRecord[]> {
    const rows = await this.db.selectFrom('tag_history').selectAll().where('repository', '=', repository).where('tag', '=', tag).orderBy('from_at').execute();
    return rows.map((r) => ({ tag: r.tag, digest: r.digest, from: r.from_at, to: r.to_at, pushedBy: r.pushed_by }));
  }

  async state(key: string): Promise<string | undefined> {
    return (await this.db.selectFrom('index_state').select('value').where('key', '=', key).executeTakeFirst())?.value;
  }

  async setState(key: string, value: string): Promise<void> {
    await this.db
      .insertInto('index_state')
      .values({ key, value })
      .onConflict((oc) => oc.column('key').doUpdateSet({ value }))
      .execute();
  }

  async close(): Promise<void> {
    await this.db.destroy();
  }
}

/**
 * the repository's row, written first in every transaction (see the file's comment); `manifests`:
 * the repository has `_manifests` now (never unset by the request path: a repository keeps it,
 * as storage keeps the directory); `exact`: set it to `manifests` either way (the rebuild)
 */
async function claim(tx: Tx, name: string, manifests: boolean, exact = false): Promise<void> {
  const flag = manifests ? 1 : 0;
  await tx
    .insertInto('repositories')
    .values({ name, has_manifests: flag })
    .onConflict((oc) => oc.column('name').doUpdateSet(exact || manifests ? { has_manifests: flag } : { name }))
    .execute();
}

function manifestRow(r: ManifestRecord): Omit<ManifestsTable, 'pull_count' | 'last_pulled_at'> {
  return {
    repository: r.repository,
    digest: r.digest,
    media_type: r.mediaType,
    size: r.size,
    config_digest: r.configDigest,
    platforms: JSON.stringify(r.platforms),
    labels: JSON.stringify(r.labels),
    annotations: JSON.stringify(r.annotations),
    subject: r.subject,
    pushed_at: r.pushed,
  };
}

function manifestRecord(row: Selectable<ManifestsTable>): ManifestRecord {
  return {
    repository: row.repository,
    digest: row.digest,
    mediaType: row.media_type,
    size: Number(row.size),
    configDigest: row.config_digest,
    platforms: JSON.parse(row.platforms),
    labels: JSON.parse(row.labels),
    annotations: JSON.parse(row.annotations),
    subject: row.subject,
    pushed: row.pushed_at,
  };
}

async function upsertManifests(tx: Tx, records: ManifestRecord[]): Promise<void> {
  for (const chunk of chunks(records.map(manifestRow), BATCH / 4)) {
    await tx
      .insertInto('manifests')
      .values(chunk)
      .onConflict((oc) =>
        oc.columns(['repository', 'digest']).doUpdateSet((eb) => ({
          media_type: eb.ref('excluded.media_type'),
          size: eb.ref('excluded.size'),
          config_digest: eb.ref('excluded.config_digest'),
          platforms: eb.ref('excluded.platforms'),
          labels: eb.ref('excluded.labels'),
          annotations: eb.ref('excluded.annotations'),
          subject: eb.ref('excluded.subject'),
          pushed_at: eb.ref('excluded.pushed_at'),
        })),
      )
      .execute();
  }
}

/** points the tag at `tag.digest`; when it named another digest (or nothing), the history gets an entry from `tag.pushed` */
async function moveTag(tx: Tx, repository: string, tag: TagRecord, pushedBy: string | null): Promise<void> {
  const current = await tx.selectFrom('tags').select('digest').where('repository', '=', repository).where('name', '=', tag.name).executeTakeFirst();
  if (current?.digest !== tag.digest) {
    await closeHistory(tx, repository, tag.name, tag.pushed);
    await tx
      .insertInto('tag_history')
      .values({ repository, tag: tag.name, digest: tag.digest, from_at: tag.pushed, to_at: null, pushed_by: pushedBy })
      .onConflict((oc) => oc.columns(['repository', 'tag', 'from_at', 'digest']).doUpdateSet({ to_at: null }))
      .execute();
  }
  await tx
    .insertInto('tags')
    .values({ repository, name: tag.name, digest: tag.digest, pushed_at: tag.pushed })
    .onConflict((oc) => oc.columns(['repository', 'name']).doUpdateSet({ digest: tag.digest, pushed_at: tag.pushed }))
    .execute();
}

async function removeTag(tx: Tx, repository: string, tag: string, at: string): Promise<void> {
  await closeHistory(tx, repository, tag, at);
  await tx.deleteFrom('tags').where('repository', '=', repository).where('name', '=', tag).execute();
}

async function closeHistory(tx: Tx, repository: string, tag: string, at: string): Promise<void> {
  await tx.updateTable('tag_history').set({ to_at: at }).where('repository', '=', repository).where('tag', '=', tag).where('to_at', 'is', null).execute();
}

/** the links, and each linked blob's row once (one INSERT may not name a key twice on PostgreSQL) */
async function linkBlobs(tx: Tx, links: (BlobLinkRecord & { repository: string })[]): Promise<void> {
  const sizes = new Map(links.map((l) => [l.digest, l.size]));
  for (const chunk of chunks([...sizes])) {
    await tx
      .insertInto('blobs')
      .values(chunk.map(([digest, size]) => ({ digest, size })))
      .onConflict((oc) => oc.column('digest').doUpdateSet((eb) => ({ size: eb.ref('excluded.size') })))
      .execute();
  }
  for (const chunk of chunks(links)) {
    await tx
      .insertInto('repository_blobs')
      .values(chunk.map((l) => ({ repository: l.repository, digest: l.digest })))
      .onConflict((oc) => oc.columns(['repository', 'digest']).doNothing())
      .execute();
  }
}

/** the rows `select` finds for `names` (asked BATCH names at a time), by their repository */
async function rowsOf<R extends { repository: string }>(names: string[], select: (part: string[]) => Promise<R[]>): Promise<Map<string, R[]>> {
  const out = new Map<string, R[]>();
  for (const part of chunks(names)) {
    for (const row of await select(part)) {
      const list = out.get(row.repository);
      if (list) list.push(row);
      else out.set(row.repository, [row]);
    }
  }
  return out;
}

function chunks<T>(items: T[], size = BATCH): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

function byCodeUnit(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
