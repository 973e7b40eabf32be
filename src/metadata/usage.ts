/**
 * Storage used, counted the way storage holds it: a blob is stored once however many
 * repositories link it, so a namespace's bytes are the sizes of the distinct blobs its
 * repositories link (`repository_blobs` joined to `blobs`) plus the distinct manifests' own
 * bytes. A layer shared by ten repositories of `team/` counts once for `team/`, and once in each
 * repository's own figure (browse.ts's `size`).
 *
 * A namespace is a name and everything below it: `team` covers `team` and `team/...`, a range of
 * the primary keys, so its cost is the namespace's links, never the registry's.
 */
import { sql, type Kysely, type RawBuilder } from 'kysely';
import type { Engine } from './migrations.js';
import type { Database } from './schema.js';

export interface Usage {
  namespace: string;
  /** repositories in the namespace (one holding only blob links included) */
  repositories: number;
  /** distinct blobs' bytes plus distinct manifests' bytes */
  bytes: number;
  /** distinct blobs linked, and their bytes */
  blobs: number;
  blobBytes: number;
  /** distinct manifests, and their bytes */
  manifests: number;
  manifestBytes: number;
}

/** names per IN list when usage is counted over some repositories of a namespace only */
const NAMES_PER_QUERY = 500;
/**
 * how long the whole registry's usage is reused: it is one pass over every link and manifest
 * (9 s at 1,000,000 tags on the bench machine), so it is computed at most once a minute
 */
export const TOP_LEVEL_REUSE_MS = 60_000;

export class UsageReads {
  private lastTopLevel?: { at: number; usage: Promise<Usage[]> };

  constructor(
    private readonly db: Kysely<Database>,
    private readonly engine: Engine,
    private readonly now: () => number = Date.now,
  ) {}

  /** every repository of the namespace (`undefined`: of the registry), by name */
  async repositoryNames(namespace?: string): Promise<string[]> {
    let q = this.db.selectFrom('repositories').select('name').orderBy('name');
    if (namespace !== undefined) q = q.where((eb) => eb.or([eb('name', '=', namespace), eb.and([eb('name', '>=', `${namespace}/`), eb('name', '<', `${namespace}0`)])]));
    return (await q.execute()).map((r) => r.name);
  }

  /** the namespace's usage over all its repositories */
  async namespace(namespace: string): Promise<Usage> {
    const within = (column: string) => sql<boolean>`(${sql.ref(column)} = ${namespace} OR (${sql.ref(column)} >= ${`${namespace}/`} AND ${sql.ref(column)} < ${`${namespace}0`}))`;
    const [repositories, blobs, manifests] = await Promise.all([
      sql<{ n: number | string }>`SELECT COUNT(*) AS n FROM repositories WHERE ${within('name')}`.execute(this.db),
      sql<{ n: number | string; bytes: number | string | null }>`SELECT COUNT(*) AS n, SUM(b.size) AS bytes FROM blobs b
        WHERE b.digest IN (SELECT rb.digest FROM repository_blobs rb WHERE ${within('rb.repository')})`.execute(this.db),
      sql<{ n: number | string; bytes: number | string | null }>`SELECT COUNT(*) AS n, SUM(d.size) AS bytes FROM
        (SELECT m.digest, MAX(m.size) AS size FROM manifests m WHERE ${within('m.repository')} GROUP BY m.digest) d`.execute(this.db),
    ]);
    return usage(namespace, Number(repositories.rows[0].n), blobs.rows[0], manifests.rows[0]);
  }

  /** the usage of some repositories of a namespace only (those a caller may see), deduplicated among them */
  async namespaceOf(namespace: string, names: readonly string[]): Promise<Usage> {
    const blobs = new Map<string, number>();
    const manifests = new Map<string, number>();
    for (let i = 0; i < names.length; i += NAMES_PER_QUERY) {
      const chunk = names.slice(i, i + NAMES_PER_QUERY);
      const [linked, described] = await Promise.all([
        this.db.selectFrom('repository_blobs as rb').innerJoin('blobs as b', 'b.digest', 'rb.digest').select(['b.digest', 'b.size']).where('rb.repository', 'in', chunk).execute(),
        this.db.selectFrom('manifests').select(['digest', 'size']).where('repository', 'in', chunk).execute(),
      ]);
      for (const b of linked) blobs.set(b.digest, Number(b.size));
      for (const m of described) manifests.set(m.digest, Math.max(manifests.get(m.digest) ?? 0, Number(m.size)));
    }
    const sum = (m: Map<string, number>) => [...m.values()].reduce((a, b) => a + b, 0);
    return usage(namespace, names.length, { n: blobs.size, bytes: sum(blobs) }, { n: manifests.size, bytes: sum(manifests) });
  }

  /**
   * the namespace's usage as one who sees only some repositories may know it: over those it
   * `sees` (all of them: one query over the namespace's range)
   */
  async visibleNamespace(namespace: string, sees: (repository: string) => boolean): Promise<Usage> {
    const names = await this.repositoryNames(namespace);
    const visible = names.filter(sees);
    return visible.length === names.length ? this.namespace(namespace) : this.namespaceOf(namespace, visible);
  }

  /** each top-level namespace's usage over the repositories the caller `sees` (namespaces it sees none of are left out) */
  async visibleTopLevel(sees: (repository: string) => boolean): Promise<Usage[]> {
    const names = await this.repositoryNames();
    const visible = names.filter(sees);
    if (visible.length === names.length) return this.topLevel();
    const byTop = new Map<string, string[]>();
    for (const name of visible) {
      const top = name.split('/')[0];
      const members = byTop.get(top) ?? [];
      members.push(name);
      byTop.set(top, members);
    }
    const usages: Usage[] = [];
    for (const [top, members] of byTop) usages.push(await this.namespaceOf(top, members));
    return usages;
  }

  /** the usage of each top-level namespace of the registry, by name, at most TOP_LEVEL_REUSE_MS old */
  topLevel(): Promise<Usage[]> {
    const now = this.now();
    if (!this.lastTopLevel || now - this.lastTopLevel.at >= TOP_LEVEL_REUSE_MS) {
      const usage = this.countTopLevel();
      this.lastTopLevel = { at: now, usage };
      // a failure is not kept: the next request tries again
      usage.catch(() => {
        if (this.lastTopLevel?.usage === usage) this.lastTopLevel = undefined;
      });
    }
    return this.lastTopLevel.usage;
  }

  /** one pass over every link and manifest */
  private async countTopLevel(): Promise<Usage[]> {
    const top = (column: string): RawBuilder<string> =>
      this.engine === 'postgres'
        ? sql`split_part(${sql.ref(column)}, '/', 1)`
        : sql`CASE WHEN instr(${sql.ref(column)}, '/') > 0 THEN substr(${sql.ref(column)}, 1, instr(${sql.ref(column)}, '/') - 1) ELSE ${sql.ref(column)} END`;
    type Sum = { ns: string; n: number | string; bytes: number | string | null };
    const [repositories, blobs, manifests] = await Promise.all([
      sql<{ ns: string; n: number | string }>`SELECT ${top('name')} AS ns, COUNT(*) AS n FROM repositories GROUP BY 1`.execute(this.db),
      sql<Sum>`SELECT x.ns, COUNT(*) AS n, SUM(b.size) AS bytes FROM
        (SELECT DISTINCT ${top('rb.repository')} AS ns, rb.digest FROM repository_blobs rb) x JOIN blobs b ON b.digest = x.digest GROUP BY x.ns`.execute(this.db),
      sql<Sum>`SELECT d.ns, COUNT(*) AS n, SUM(d.size) AS bytes FROM
        (SELECT ${top('m.repository')} AS ns, m.digest, MAX(m.size) AS size FROM manifests m GROUP BY 1, 2) d GROUP BY d.ns`.execute(this.db),
    ]);
    const byNs = <T extends { ns: string }>(rows: T[]) => new Map(rows.map((r) => [r.ns, r]));
    const [b, m] = [byNs(blobs.rows), byNs(manifests.rows)];
    return repositories.rows
      .map((r) => usage(r.ns, Number(r.n), b.get(r.ns) ?? { n: 0, bytes: 0 }, m.get(r.ns) ?? { n: 0, bytes: 0 }))
      .sort((x, y) => (x.namespace < y.namespace ? -1 : x.namespace > y.namespace ? 1 : 0));
  }
}

function usage(namespace: string, repositories: number, blobs: { n: number | string; bytes: number | string | null }, manifests: { n: number | string; bytes: number | string | null }): Usage {
  const blobBytes = Number(blobs.bytes ?? 0);
  const manifestBytes = Number(manifests.bytes ?? 0);
  return { namespace, repositories, bytes: blobBytes + manifestBytes, blobs: Number(blobs.n), blobBytes, manifests: Number(manifests.n), manifestBytes };
}
