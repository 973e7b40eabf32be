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
import { sql, type Kysely, type Selectable, type Transaction } from 'kysely';
import type { Engine } from './migrations.js';
import { PreparedQuery, PreparedRows } from './prepared.js';
import type { BlobLinkRecord, ManifestRecord, RepositoryFacts, TagHistoryRecord, TagRecord } from './records.js';
import type { Database, ManifestsTable } from './schema.js';

/** rows per INSERT and keys per IN list: well under both engines' bound on parameters */
const BATCH = 200;

/** index_state: when the last rebuild finished (ISO time) */
export const REBUILT_KEY = 'rebuilt';

type Tx = Transaction<Database>;

/** a repository as storage holds it, for the rebuild's batches (replaceRepository's arguments) */
export interface Replacement {
  facts: RepositoryFacts;
  hasManifests: boolean;
  expectChanges?: number;
  /**
   * only a part of the repository (rebuild.ts splits a big one into transactions of bounded
   * length): per kind of row, the key range it replaces (`facts` holds that range's records);
   * a kind not named is left as it is. A part is replaced alone, never in a batch.
   */
  part?: Partial<Record<RowKind, KeyRange>>;
}

/** the rows of a repository, by kind: manifests by digest, tags by name, `_layers` links by digest */
export type RowKind = 'manifests' | 'tags' | 'blobs';

/** keys from `from` (inclusive) to `to` (exclusive), in the database's byte order (migration 0002_byte_order); an end left out is open */
export interface KeyRange {
  from?: string;
  to?: string;
}

export class MetadataIndex {
  private readonly queries: RequestQueries;
  private readonly batchQueries: BatchQueries;

  constructor(
    readonly db: Kysely<Database>,
    readonly engine: Engine,
    private readonly now: () => number = Date.now,
  ) {
    this.queries = new RequestQueries(db);
    this.batchQueries = new BatchQueries(db);
  }

  private time(): string {
    return new Date(this.now()).toISOString();
  }

  // writes of the request path (registry/indexing/sink.ts)

  /**
   * the manifest, and `tags` pointed at it by the same PUT: one transaction, so a push costs the
   * request path one write (one commit) for its manifest and tags; `pushedBy`: the tags' history
   */
  async manifestStored(record: ManifestRecord, tags: readonly string[] = [], pushedBy?: string): Promise<void> {
    const q = this.queries;
    await this.db.transaction().execute(async (tx) => {
      await q.claim(tx, record.repository, true);
      await q.upsertManifest.run(tx, manifestRow(record));
      const pushed = this.time();
      for (const name of tags) await moveTag(q, tx, record.repository, { name, digest: record.digest, pushed }, pushedBy ?? null);
    });
  }

  async manifestRemoved(repository: string, digest: string): Promise<void> {
    await this.db.transaction().execute(async (tx) => {
      await this.queries.claim(tx, repository, true);
      const at = this.time();
      const tags = await tx.selectFrom('tags').select('name').where('repository', '=', repository).where('digest', '=', digest).execute();
      for (const { name } of tags) await removeTag(this.queries, tx, repository, name, at);
      await tx.deleteFrom('manifests').where('repository', '=', repository).where('digest', '=', digest).execute();
    });
  }

  async tagMoved(repository: string, tag: string, digest: string, pushedBy?: string): Promise<void> {
    await this.db.transaction().execute(async (tx) => {
      await this.queries.claim(tx, repository, true);
      await moveTag(this.queries, tx, repository, { name: tag, digest, pushed: this.time() }, pushedBy ?? null);
    });
  }

  async tagRemoved(repository: string, tag: string): Promise<void> {
    await this.db.transaction().execute(async (tx) => {
      await this.queries.claim(tx, repository, true);
      await removeTag(this.queries, tx, repository, tag, this.time());
    });
  }

  async blobLinked(repository: string, digest: string, size: number): Promise<void> {
    await this.db.transaction().execute(async (tx) => {
      await this.queries.claim(tx, repository, false);
      await this.queries.blobRow.run(tx, { digest, size });
      await this.queries.link.run(tx, { repository, digest });
    });
  }

  /**
   * the link goes; the blob's row stays until a rebuild (another repository may link it
   * meanwhile). Counted as a write like the others, so a rebuild that read the link before it went
   * does not put it back; a repository without a row gets none (it has no link to remove).
   */
  async blobUnlinked(repository: string, digest: string): Promise<void> {
    await this.db.transaction().execute(async (tx) => {
      await tx
        .updateTable('repositories')
        .set({ changes: sql<number>`changes + 1` })
        .where('name', '=', repository)
        .execute();
      await tx.deleteFrom('repository_blobs').where('repository', '=', repository).where('digest', '=', digest).execute();
    });
  }

  // the rebuild's writes

  /**
   * makes the repository's rows what storage holds: manifests, tags and links not in `facts` go,
   * the others are written; a tag that moved or went closes its history entry and a new one opens
   * at the tag's time. `hasManifests`: the repository has `_manifests` (the catalog lists it).
   */
  async replaceRepository(facts: RepositoryFacts, hasManifests: boolean, expectChanges?: number): Promise<void> {
    await this.db.transaction().execute(async (tx) => {
      // a write of the request path landed since `facts` were read: they may lack it (roll back)
      if ((await replaceAll(this.queries, this.batchQueries, tx, [{ facts, hasManifests, expectChanges }], this.time())).length > 0) throw new RepositoryChangedError(facts.name);
    });
  }

  /**
   * the rebuild's batch: several repositories replaced as replaceRepository does, in one
   * transaction and with statements over the whole batch (per repository, the statements and
   * the commit were most of a rebuild's time). A repository the request path wrote to since its
   * `expectChanges` is left as it was; its name is returned, to be read from storage again.
   */
  async replaceRepositories(batch: readonly Replacement[]): Promise<string[]> {
    return this.db.transaction().execute((tx) => replaceAll(this.queries, this.batchQueries, tx, batch, this.time()));
  }

  /**
   * a repository storage no longer has: its rows go, its tags' history is closed and kept.
   * `expectChanges`: only if the request path wrote nothing to it since (false when it did).
   */
  async dropRepository(name: string, expectChanges?: number): Promise<boolean> {
    return this.db.transaction().execute(async (tx) => {
      // the row first: it locks the repository against the request path's writes
      let row = tx.deleteFrom('repositories').where('name', '=', name);
      if (expectChanges !== undefined) row = row.where('changes', '=', expectChanges);
      if (Number((await row.executeTakeFirst()).numDeletedRows) === 0 && expectChanges !== undefined) return false;
      const at = this.time();
      await tx.updateTable('tag_history').set({ to_at: at }).where('repository', '=', name).where('to_at', 'is', null).execute();
      await tx.deleteFrom('tags').where('repository', '=', name).execute();
      await tx.deleteFrom('manifests').where('repository', '=', name).execute();
      await tx.deleteFrom('repository_blobs').where('repository', '=', name).execute();
      return true;
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

  /** every repository in the index, by name in code-unit order: the database's (migration 0002_byte_order) */
  async repositoryNames(): Promise<string[]> {
    const rows = await this.db.selectFrom('repositories').select('name').orderBy('name').execute();
    return rows.map((r) => r.name);
  }

  /** how many writes of the request path each repository had (0 for one without a row) */
  async repositoryChanges(): Promise<Map<string, number>> {
    const rows = await this.db.selectFrom('repositories').select(['name', 'changes']).execute();
    return new Map(rows.map((r) => [r.name, Number(r.changes)]));
  }

  async changesOf(name: string): Promise<number> {
    return changesOf(this.db, name);
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

type ManifestRow = ReturnType<typeof manifestRow>;

/** the statements the request path runs, each built and compiled once (prepared.ts) */
class RequestQueries {
  private readonly claims: Record<'manifests' | 'links', PreparedQuery<'name'>>;
  readonly upsertManifest: PreparedQuery<keyof ManifestRow>;
  readonly currentTag: PreparedQuery<'repository' | 'name', { digest: string }>;
  readonly closeHistory: PreparedQuery<'repository' | 'tag' | 'at'>;
  readonly openHistory: PreparedQuery<'repository' | 'tag' | 'digest' | 'from' | 'pushedBy'>;
  readonly pointTag: PreparedQuery<'repository' | 'name' | 'digest' | 'pushed'>;
  readonly deleteTag: PreparedQuery<'repository' | 'name'>;
  readonly blobRow: PreparedQuery<'digest' | 'size'>;
  readonly link: PreparedQuery<'repository' | 'digest'>;

  constructor(db: Kysely<Database>) {
    const claim = (manifests: boolean) =>
      new PreparedQuery(['name'], ({ name }) =>
        db
          .insertInto('repositories')
          .values({ name, has_manifests: manifests ? 1 : 0, changes: 1 })
          .onConflict((oc) => oc.column('name').doUpdateSet({ ...(manifests ? { has_manifests: 1 } : { name }), changes: sql<number>`repositories.changes + 1` })),
      );
    this.claims = { manifests: claim(true), links: claim(false) };
    const columns = Object.keys(manifestRow(SAMPLE_MANIFEST)) as (keyof ManifestRow)[];
    this.upsertManifest = new PreparedQuery(columns, (row) => manifestsUpsert(db, [row]));
    this.currentTag = new PreparedQuery(['repository', 'name'], ({ repository, name }) => db.selectFrom('tags').select('digest').where('repository', '=', repository).where('name', '=', name));
    this.closeHistory = new PreparedQuery(['repository', 'tag', 'at'], ({ repository, tag, at }) =>
      db.updateTable('tag_history').set({ to_at: at }).where('repository', '=', repository).where('tag', '=', tag).where('to_at', 'is', null),
    );
    this.openHistory = new PreparedQuery(['repository', 'tag', 'digest', 'from', 'pushedBy'], ({ repository, tag, digest, from, pushedBy }) =>
      db
        .insertInto('tag_history')
        .values({ repository, tag, digest, from_at: from, to_at: null, pushed_by: pushedBy })
        .onConflict((oc) => oc.columns(['repository', 'tag', 'from_at', 'digest']).doUpdateSet({ to_at: null })),
    );
    this.pointTag = new PreparedQuery(['repository', 'name', 'digest', 'pushed'], ({ repository, name, digest, pushed }) =>
      db
        .insertInto('tags')
        .values({ repository, name, digest, pushed_at: pushed })
        .onConflict((oc) => oc.columns(['repository', 'name']).doUpdateSet({ digest, pushed_at: pushed })),
    );
    this.deleteTag = new PreparedQuery(['repository', 'name'], ({ repository, name }) => db.deleteFrom('tags').where('repository', '=', repository).where('name', '=', name));
    this.blobRow = new PreparedQuery(['digest', 'size'], ({ digest, size }) => blobsUpsert(db, [[digest, size]]));
    this.link = new PreparedQuery(['repository', 'digest'], (link) => linksInsert(db, [link]));
  }

  /**
   * the repository's row, written first in every transaction of the request path (see the file's
   * comment), which counts its writes; `manifests`: the repository has `_manifests` now (never unset
   * by the request path: a repository keeps it, as storage keeps the directory)
   */
  async claim(tx: Tx, name: string, manifests: boolean): Promise<void> {
    await this.claims[manifests ? 'manifests' : 'links'].run(tx, { name });
  }
}

type TagRow = ReturnType<typeof tagRow>;
type HistoryRow = { repository: string; tag: string; digest: string; from_at: string };

/** the rebuild's statements over many rows, each compiled once per number of rows (prepared.ts) */
class BatchQueries {
  readonly manifests: PreparedRows<keyof ManifestRow>;
  readonly tags: PreparedRows<keyof TagRow>;
  readonly history: PreparedRows<keyof HistoryRow>;
  readonly blobs: PreparedRows<'digest' | 'size'>;
  readonly links: PreparedRows<'repository' | 'digest'>;

  constructor(db: Kysely<Database>) {
    this.manifests = new PreparedRows(Object.keys(manifestRow(SAMPLE_MANIFEST)) as (keyof ManifestRow)[], (rows) => manifestsUpsert(db, rows));
    this.tags = new PreparedRows(Object.keys(tagRow({ repository: '', name: '', digest: '', pushed: '' }, UNKNOWN_FIGURES)) as (keyof TagRow)[], (rows) =>
      db
        .insertInto('tags')
        .values(rows)
        .onConflict((oc) => oc.columns(['repository', 'name']).doUpdateSet((eb) => ({ digest: eb.ref('excluded.digest'), pushed_at: eb.ref('excluded.pushed_at') }))),
    );
    this.history = new PreparedRows(['repository', 'tag', 'digest', 'from_at'], (rows) =>
      db
        .insertInto('tag_history')
        .values(rows.map((r) => ({ ...r, to_at: null, pushed_by: null })))
        .onConflict((oc) => oc.columns(['repository', 'tag', 'from_at', 'digest']).doUpdateSet({ to_at: null })),
    );
    this.blobs = new PreparedRows(['digest', 'size'], (rows) => blobsUpsert(db, rows.map((r) => [r.digest, r.size])));
    this.links = new PreparedRows(['repository', 'digest'], (rows) => linksInsert(db, rows));
  }
}

/** a record whose row gives the manifests table's columns, in order */
const SAMPLE_MANIFEST: ManifestRecord = { repository: '', digest: '', mediaType: '', size: 0, configDigest: null, platforms: [], labels: {}, annotations: {}, subject: null, pushed: '', imageSize: null, created: null };

async function changesOf(db: Kysely<Database>, name: string): Promise<number> {
  const row = await db.selectFrom('repositories').select('changes').where('name', '=', name).executeTakeFirst();
  return Number(row?.changes ?? 0);
}

/**
 * the rebuild's replacement (MetadataIndex.replaceRepository and replaceRepositories): the
 * repositories the request path wrote to since their `expectChanges` are returned and left alone
 * (claimUnchanged), the others' rows (or, for a part, the rows of its ranges) made what storage
 * holds. `at`: when the tags that went or moved left.
 */
async function replaceAll(queries: RequestQueries, b: BatchQueries, tx: Tx, batch: readonly Replacement[], at: string): Promise<string[]> {
  const part = batch.find((r) => r.part)?.part;
  if (part && batch.length > 1) throw new Error('a part of a repository is replaced alone, not in a batch');
  const kept = await claimUnchanged(tx, batch);
  const names = kept.map((r) => r.facts.name);
  // a part reads (and removes) only the rows of its ranges; a whole repository all its rows
  const touches = (kind: RowKind) => !part || part[kind] !== undefined;
  const range = (kind: RowKind): KeyRange => part?.[kind] ?? {};
  if (touches('manifests')) await replaceManifests(b, tx, kept, names, range('manifests'));
  if (touches('tags')) await replaceTags(queries, b, tx, kept, names, range('tags'), at);
  if (touches('blobs')) await replaceLinks(b, tx, kept, names, range('blobs'));
  return batch.filter((r) => !kept.includes(r)).map((r) => r.facts.name);
}

/**
 * each repository's row written first (a new one gets its row, an existing one is left as it is:
 * the lock of the file's comment, no write counted), then each one's count of the request path's
 * writes compared with its `expectChanges`: the repositories whose count is the expected one
 * (their `hasManifests` written), the others left alone
 */
async function claimUnchanged(tx: Tx, batch: readonly Replacement[]): Promise<Replacement[]> {
  for (const chunk of chunks([...batch])) {
    await tx
      .insertInto('repositories')
      .values(chunk.map((r) => ({ name: r.facts.name, has_manifests: r.hasManifests ? 1 : 0, changes: 0 })))
      .onConflict((oc) => oc.column('name').doUpdateSet((eb) => ({ name: eb.ref('excluded.name') })))
      .execute();
  }
  const rows = await inChunks(batch.map((r) => r.facts.name), (chunk) => tx.selectFrom('repositories').select(['name', 'changes']).where('name', 'in', chunk).execute());
  const counts = new Map(rows.map((row) => [row.name, Number(row.changes)]));
  const kept = batch.filter((r) => r.expectChanges === undefined || counts.get(r.facts.name) === r.expectChanges);
  for (const flag of [0, 1]) {
    const named = kept.filter((r) => (r.hasManifests ? 1 : 0) === flag).map((r) => r.facts.name);
    for (const chunk of chunks(named)) await tx.updateTable('repositories').set({ has_manifests: flag }).where('name', 'in', chunk).execute();
  }
  return kept;
}

async function replaceManifests(b: BatchQueries, tx: Tx, kept: Replacement[], names: string[], range: KeyRange): Promise<void> {
  const records = manifests(kept);
  const wanted = new Set(records.map((m) => `${m.repository}\n${m.digest}`));
  const indexed = await inChunks(names, (chunk) =>
    tx
      .selectFrom('manifests')
      .select(['repository', 'digest'])
      .where('repository', 'in', chunk)
      .$if(range.from !== undefined, (q) => q.where('digest', '>=', range.from!))
      .$if(range.to !== undefined, (q) => q.where('digest', '<', range.to!))
      .execute(),
  );
  const stale = indexed.filter((m) => !wanted.has(`${m.repository}\n${m.digest}`));
  for (const [repository, digests] of byRepository(stale, (m) => m.digest)) {
    for (const chunk of chunks(digests)) await tx.deleteFrom('manifests').where('repository', '=', repository).where('digest', 'in', chunk).execute();
  }
  for (const chunk of chunks(records.map(manifestRow), BATCH / 20)) await b.manifests.run(tx, chunk);
}

async function replaceTags(queries: RequestQueries, b: BatchQueries, tx: Tx, kept: Replacement[], names: string[], range: KeyRange, at: string): Promise<void> {
  const rows = await inChunks(names, (chunk) =>
    tx
      .selectFrom('tags')
      .select(['repository', 'name', 'digest'])
      .where('repository', 'in', chunk)
      .$if(range.from !== undefined, (q) => q.where('name', '>=', range.from!))
      .$if(range.to !== undefined, (q) => q.where('name', '<', range.to!))
      .execute(),
  );
  const indexed = new Map(rows.map((t) => [`${t.repository}\n${t.name}`, t.digest]));
  const tags = kept.flatMap((r) => r.facts.tags.map((t) => ({ repository: r.facts.name, ...t })));
  const stored = new Set(tags.map((t) => `${t.repository}\n${t.name}`));
  for (const key of indexed.keys()) {
    if (stored.has(key)) continue;
    const [repository, name] = key.split('\n');
    await removeTag(queries, tx, repository, name, at);
  }
  // a tag whose digest changed (or that is new) closes its open entry (only a tag with a row has one) and opens one at the tag's time
  const moved = tags.filter((t) => indexed.get(`${t.repository}\n${t.name}`) !== t.digest);
  const reopened = moved.filter((t) => indexed.has(`${t.repository}\n${t.name}`));
  for (const [repository, names] of byRepository(reopened, (t) => t.name)) {
    for (const chunk of chunks(names)) await tx.updateTable('tag_history').set({ to_at: at }).where('repository', '=', repository).where('tag', 'in', chunk).where('to_at', 'is', null).execute();
  }
  for (const chunk of chunks(moved, BATCH / 4)) await b.history.run(tx, chunk.map((t) => ({ repository: t.repository, tag: t.name, digest: t.digest, from_at: t.pushed })));
  // each tag's manifest's figures in its row when the batch holds the manifest (a part of tags
  // does not): the insert triggers then leave the row alone (migration 0009_tag_writes)
  const figures = new Map(manifests(kept).map((m) => [`${m.repository}\n${m.digest}`, tagFigures(m)]));
  for (const chunk of chunks(tags, BATCH / 4)) await b.tags.run(tx, chunk.map((t) => tagRow(t, figures.get(`${t.repository}\n${t.digest}`) ?? UNKNOWN_FIGURES)));
}

function manifests(kept: Replacement[]): ManifestRecord[] {
  return kept.flatMap((r) => r.facts.manifests);
}

/** what the triggers copy onto a tag from its manifest (computed once per manifest, not per tag) */
function tagFigures(m: ManifestRecord) {
  return { manifest_size: m.size, image_size: m.imageSize, created: m.created, platform_names: platformNames(m.platforms), media_type: m.mediaType as string | null };
}

/** a tag whose manifest the batch does not hold: the triggers look (a NULL `media_type` tells them to) */
const UNKNOWN_FIGURES: ReturnType<typeof tagFigures> = { manifest_size: 0, image_size: null, created: null, platform_names: null, media_type: null };

/** a tag's row, with what the triggers would copy from its manifest */
function tagRow(t: TagRecord & { repository: string }, f: ReturnType<typeof tagFigures>) {
  return {
    repository: t.repository,
    name: t.name,
    digest: t.digest,
    pushed_at: t.pushed,
    manifest_size: f.manifest_size,
    image_size: f.image_size,
    created: f.created,
    platform_names: f.platform_names,
    media_type: f.media_type,
  };
}

async function replaceLinks(b: BatchQueries, tx: Tx, kept: Replacement[], names: string[], range: KeyRange): Promise<void> {
  const links = new Set(kept.flatMap((r) => r.facts.blobs.map((blob) => `${r.facts.name}\n${blob.digest}`)));
  const indexed = await inChunks(names, (chunk) =>
    tx
      .selectFrom('repository_blobs')
      .select(['repository', 'digest'])
      .where('repository', 'in', chunk)
      .$if(range.from !== undefined, (q) => q.where('digest', '>=', range.from!))
      .$if(range.to !== undefined, (q) => q.where('digest', '<', range.to!))
      .execute(),
  );
  const unlinked = indexed.filter((l) => !links.has(`${l.repository}\n${l.digest}`));
  for (const [repository, digests] of byRepository(unlinked, (l) => l.digest)) {
    for (const chunk of chunks(digests)) await tx.deleteFrom('repository_blobs').where('repository', '=', repository).where('digest', 'in', chunk).execute();
  }
  const linked = kept.flatMap((r) => r.facts.blobs.map((blob) => ({ repository: r.facts.name, ...blob })));
  // each blob's row (its size), then the repository's link to it
  const sizes = new Map(linked.map((l) => [l.digest, l.size]));
  for (const chunk of chunks([...sizes])) await b.blobs.run(tx, chunk.map(([digest, size]) => ({ digest, size })));
  for (const chunk of chunks(linked)) await b.links.run(tx, chunk);
}

/** what `read` gives for the named repositories, asked a few IN lists at a time */
async function inChunks<R>(names: string[], read: (chunk: string[]) => Promise<R[]>): Promise<R[]> {
  const rows: R[] = [];
  for (const chunk of chunks(names)) rows.push(...(await read(chunk)));
  return rows;
}

/** `items` grouped by their repository, each as what `value` takes from it */
function byRepository<T extends { repository: string }>(items: T[], value: (item: T) => string): Map<string, string[]> {
  const out = new Map<string, string[]>();
  for (const item of items) out.set(item.repository, [...(out.get(item.repository) ?? []), value(item)]);
  return out;
}

/** the repository was written by the request path while a rebuild read it from storage: read it again */
export class RepositoryChangedError extends Error {
  constructor(readonly repository: string) {
    super(`repository ${JSON.stringify(repository)} changed while it was read from storage`);
  }
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
    image_size: r.imageSize,
    created: r.created,
    platform_names: platformNames(r.platforms),
  };
}

/** characters of the platforms' sort text kept (an index of dozens of platforms sorts by its first ones) */
const PLATFORM_CHARS = 256;

/** the platforms as the web interface lists them, comma-separated: what a tag list sorts by */
function platformNames(platforms: ManifestRecord['platforms']): string | null {
  const text = platforms.map((p) => [p.os, p.architecture, ...(p.variant ? [p.variant] : [])].join('/')).join(',');
  return text === '' ? null : text.slice(0, PLATFORM_CHARS);
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
    imageSize: row.image_size === null ? null : Number(row.image_size),
    created: row.created,
  };
}

/** the manifests' rows, each written whole over the one it replaces */
function manifestsUpsert(db: Kysely<Database>, rows: ManifestRow[]) {
  return db
    .insertInto('manifests')
    .values(rows)
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
        image_size: eb.ref('excluded.image_size'),
        created: eb.ref('excluded.created'),
        platform_names: eb.ref('excluded.platform_names'),
      })),
    );
}

/** points the tag at `tag.digest`; when it named another digest (or nothing), the history gets an entry from `tag.pushed` */
async function moveTag(q: RequestQueries, tx: Tx, repository: string, tag: TagRecord, pushedBy: string | null): Promise<void> {
  const [current] = (await q.currentTag.run(tx, { repository, name: tag.name })).rows;
  if (current?.digest !== tag.digest) {
    await q.closeHistory.run(tx, { repository, tag: tag.name, at: tag.pushed });
    await q.openHistory.run(tx, { repository, tag: tag.name, digest: tag.digest, from: tag.pushed, pushedBy });
  }
  await q.pointTag.run(tx, { repository, name: tag.name, digest: tag.digest, pushed: tag.pushed });
}

async function removeTag(q: RequestQueries, tx: Tx, repository: string, tag: string, at: string): Promise<void> {
  await q.closeHistory.run(tx, { repository, tag, at });
  await q.deleteTag.run(tx, { repository, name: tag });
}

/** blobs' rows: digest and size */
function blobsUpsert(db: Kysely<Database>, sizes: [digest: string, size: number][]) {
  return db
    .insertInto('blobs')
    .values(sizes.map(([digest, size]) => ({ digest, size })))
    .onConflict((oc) => oc.column('digest').doUpdateSet((eb) => ({ size: eb.ref('excluded.size') })));
}

/** repositories' links to blobs (kept when there already) */
function linksInsert(db: Kysely<Database>, links: { repository: string; digest: string }[]) {
  return db
    .insertInto('repository_blobs')
    .values(links.map((l) => ({ repository: l.repository, digest: l.digest })))
    .onConflict((oc) => oc.columns(['repository', 'digest']).doNothing());
}

function chunks<T>(items: T[], size = BATCH): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

function byCodeUnit(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
