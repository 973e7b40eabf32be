/**
 * Read-only helpers of the web interface under /ui/api/, for what the V2 API lacks (a searchable
 * catalog with tag counts, tags with sizes and platforms, a manifest with its config, children and
 * referrers in one answer). Each asks the registry's own authorization first, for the same access
 * the V2 API would need, so a user sees here only what they may pull.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { CATALOG_ACCESS, type AccessRequest } from '../auth/access.js';
import type { CallerGrant } from '../auth/index.js';
import type { BrowseReads, Services } from '../http/context.js';
import { authorizeRequest } from '../http/authorize.js';
import { clientGone } from '../http/client-gone.js';
import { queryValue } from '../http/body.js';
import { parsePagination } from '../http/pagination.js';
import { readActivity, readTagPushed } from '../registry/activity.js';
import { isDigest, parseDigest } from '../registry/digest.js';
import { RegistryError } from '../registry/errors.js';
import type { Reference } from '../registry/manifest-store.js';
import { checkRepositoryName, checkTag } from '../registry/names.js';
import { mapLimited } from '../registry/pool.js';
import { visiblePage, visibleRows, type VisiblePage } from '../registry/visible-catalog.js';
import type { StorageDriver } from '../storage/driver.js';
import { session } from './session.js';
import { auditPage } from './audit-api.js';
import { isIndex, parseManifest, platformName, readConfig, summarize } from './summary.js';
import { markSigned, signedBy } from './signatures.js';
import { parseFrom, parseSort, summaryCache, tagPage, type SortKey, type SummaryCache, type TagSource } from './tag-list.js';
import type { PageRequest } from '../http/pagination.js';
import type { Keyset, TagColumn } from '../metadata/browse.js';
import type { ImageConfig, ManifestDetail, RegistryAbout, RepositoryPage, SearchAnswer, TagPage, TagRow } from './wire.js';
import { nameUnknown } from '../registry/repositories.js';
import { indexReads } from '../http/handlers/browse.js';

/** what the registry page shows beyond the settings (attach() of the feature fills it in) */
export interface RegistryState {
  driver?: StorageDriver;
  /** the notification endpoints: name, queue and delivery counters, answers by status (no URL or headers) */
  notifications?(): RegistryAbout['notifications'];
  /** every feature's figures (gc, proxy, ...), as /debug/vars has them */
  figures?(): Record<string, Record<string, number>>;
  /** the failing health checks by name (empty: ready) */
  health?(): Promise<Record<string, string>>;
  /** manifest summaries by name@digest, for sorted tag lists (made on first use) */
  summaries?: SummaryCache;
  /** version, storage driver, modes */
  about: Omit<RegistryAbout, 'healthy' | 'failing' | 'notifications' | 'figures'>;
}

/** repositories one page of the list may hold */
const REPOSITORY_PAGE = { defaultN: 50, max: 200 };
/** tags one page may hold: each costs a manifest read and a config read (unless its summary is kept) */
const TAG_PAGE = { defaultN: 25, max: 100 };
/** catalog entries read at a time while searching */
/** tags looked at for "which tags name this digest" (a delete's confirmation) */
const TAG_SCAN_LIMIT = 1000;
const PAGE_CONCURRENCY = 4;
/** tags whose push times are read for a repository's last push in the list (50 repositories a page: 5,000 reads at most) */
const PUSH_LOOKUP_TAGS = 100;

const ROUTES: [RegExp, (m: RegExpExecArray, req: FastifyRequest, services: Services, state: RegistryState, reply: FastifyReply) => Promise<unknown>][] = [
  [/^\/ui\/api\/repositories$/, (_m, req, services, state, reply) => repositories(req, services, state, clientGone(reply))],
  // `tags/list` as in the V2 API: no path ends both in `/tags/list` and in `/manifests/<reference>`,
  // so the greedy name is right even for names holding `/manifests/` or `/tags/` (legal in OCI)
  [/^\/ui\/api\/repositories\/(.+)\/tags\/list$/, (m, req, services, state) => tags(req, services, state, checkRepositoryName(m[1]))],
  [/^\/ui\/api\/repositories\/(.+)\/manifests\/([^/]+)$/, (m, req, services, state) => manifest(req, services, state, checkRepositoryName(m[1]), m[2])],
  [/^\/ui\/api\/registry$/, (_m, req, services, state) => registry(req, services, state)],
  [/^\/ui\/api\/search$/, (_m, req, services) => search(req, services)],
  [/^\/ui\/api\/session$/, (_m, req, services) => session(req, services)],
  [/^\/ui\/api\/audit$/, (_m, req, services) => auditPage(req, services)],
];

export async function serveAPI(req: FastifyRequest, reply: FastifyReply, path: string, services: Services, state: RegistryState): Promise<unknown> {
  for (const [pattern, handle] of ROUTES) {
    const m = pattern.exec(path);
    if (!m) continue;
    const body = await handle(m, req, services, state, reply);
    return reply.header('content-type', 'application/json; charset=utf-8').header('cache-control', 'no-store').send(JSON.stringify(body));
  }
  throw new RegistryError('NOT_FOUND', `no web interface helper at ${path}`);
}

/** the V2 API's authorization and rate limit, for the access the V2 API would need */
const authorize = (req: FastifyRequest, services: Services, needed: AccessRequest[]): Promise<CallerGrant> => authorizeRequest(req, services.auth, needed);

const pull = (name: string): AccessRequest => ({ type: 'repository', name, action: 'pull' });

/**
 * GET /ui/api/repositories?q=&n=&last=: the repositories the caller may pull whose name holds `q`,
 * with their tag counts and last push (the newest of their tags' pushes; not looked up for a
 * repository of more than PUSH_LOOKUP_TAGS tags, which would cost a read per tag). The catalog is
 * read a chunk at a time until the page is full or a request's scan budget is spent (the page
 * is then shorter, its `next` sealed: registry/visible-catalog.ts), so a registry of 100,000
 * repositories is never held in memory; a search the browser gave up on (the user typed on) stops walking.
 */
async function repositories(req: FastifyRequest, services: Services, state: RegistryState, gone: AbortSignal): Promise<RepositoryPage> {
  const grant = await authorize(req, services, []);
  const page = parsePagination(req, REPOSITORY_PAGE);
  const q = (queryValue(req, 'q') ?? '').trim().toLowerCase();
  if (page.last !== undefined) page.last = services.catalogCursors.open(page.last);
  const reads = await indexedReads(services);
  if (reads) return indexedRepositories(services, reads, page, q, grant);
  const found: VisiblePage = page.n === 0 ? { repositories: [], more: false } : await visiblePage(services.catalog, page, (name) => name.includes(q) && grant.lists(name), gone);
  const names = found.repositories;
  const rows = await mapLimited(names, PAGE_CONCURRENCY * 2, async (name): Promise<RepositoryPage['repositories'][number]> => {
    const tags = await services.content.tags(name).catch(() => undefined);
    if (!tags) return { name };
    if (tags.length > PUSH_LOOKUP_TAGS) return { name, tags: tags.length };
    const times = await mapLimited(tags, PAGE_CONCURRENCY, (tag) => tagPushed(state, name, tag));
    const newest = Math.max(...times.filter((t): t is number => t !== undefined));
    return { name, tags: tags.length, pushed: Number.isFinite(newest) ? new Date(newest).toISOString() : undefined };
  });
  const next = found.stoppedAt ? services.catalogCursors.seal(found.stoppedAt) : names[names.length - 1];
  return { repositories: rows, pushLookup: PUSH_LOOKUP_TAGS, next: found.more ? next : undefined };
}

/** the same from the metadata index: sizes and pulls too, and no walk (a page is one range of an index) */
async function indexedRepositories(services: Services, reads: BrowseReads, page: PageRequest, q: string, grant: CallerGrant): Promise<RepositoryPage> {
  const found =
    page.n === 0
      ? { rows: [], more: false }
      : await visibleRows<Awaited<ReturnType<typeof reads.browse.repositories>>[number], Keyset>(
          (after, limit) => reads.browse.repositories({ sort: 'name', desc: false, after, limit }),
          (row) => ({ name: row.name }),
          (row) => row.name.includes(q) && grant.lists(row.name),
          page.n,
          page.last === undefined ? undefined : { name: page.last },
        );
  const last = found.stoppedAt ? services.catalogCursors.seal(found.stoppedAt.name) : found.rows[found.rows.length - 1]?.name;
  return { repositories: found.rows, pushLookup: Number.MAX_SAFE_INTEGER, next: found.more ? last : undefined, indexed: true };
}

/** GET /ui/api/repositories/<name>/tags/list?n=&sort=&desc=1&last=|from=: a page of tags, each with its manifest's summary, sorted (tag-list.ts) */
async function tags(req: FastifyRequest, services: Services, state: RegistryState, name: string): Promise<TagPage> {
  await authorize(req, services, [pull(name)]);
  const page = parsePagination(req, TAG_PAGE);
  const [sort, from] = [parseSort(queryValue(req, 'sort')), parseFrom(queryValue(req, 'from'))];
  const summaries = (state.summaries ??= summaryCache());
  const reads = await indexedReads(services);
  if (reads) {
    return markSigned(await indexedTags(services, reads, summaries, name, { ...page, sort, desc: queryValue(req, 'desc') === '1' }), services.pullGate);
  }
  const source: TagSource = {
    name,
    tags: await services.content.tags(name),
    async summary(tag) {
      const stored = await services.content.manifest(name, { tag });
      const key = `${name}@${stored.digest}`;
      let summary = summaries.get(key);
      if (!summary) summaries.set(key, (summary = await summarize(services.content, name, stored)));
      return summary;
    },
    pushed: (tag) => tagPushed(state, name, tag),
  };
  return markSigned(await tagPage(source, { n: page.n, last: page.last, from, sort, desc: queryValue(req, 'desc') === '1' }), services.pullGate);
}

/** the index's column for each of the view's (tag-list.ts's SORT_KEYS): `size` is the image's, not the manifest's */
const INDEX_COLUMN: Record<SortKey, TagColumn> = { tag: 'name', digest: 'digest', mediaType: 'mediaType', size: 'imageSize', platforms: 'platforms', created: 'created', pushed: 'pushed' };
/** the columns a tag may have no value in (it then comes last; its cursor's value is empty) */
const MAY_LACK: ReadonlySet<SortKey> = new Set(['mediaType', 'size', 'platforms', 'created']);

/**
 * A page of tags by any column from the metadata index, over the whole list: the index gives the
 * page's tags and digests (one range of an index), the summaries come from the cache by digest
 * or, the first time, from storage. `last` is the tag (by name) or `<value>,<tag>` (a tag holds
 * no comma; a value may: the platforms), the value empty among the tags without one.
 */
async function indexedTags(services: Services, reads: BrowseReads, summaries: SummaryCache, name: string, query: PageRequest & { sort: SortKey; desc: boolean }): Promise<TagPage> {
  if (!(await reads.browse.hasRepository(name))) throw nameUnknown(name);
  const after = query.last === undefined ? undefined : parseTagCursor(query.last, query.sort);
  const [figures, rows] = await Promise.all([
    reads.browse.figures([name]),
    query.n === 0 ? [] : reads.browse.sortedTags(name, { sort: INDEX_COLUMN[query.sort], desc: query.desc, after, limit: query.n + 1 }),
  ]);
  const items = rows.slice(0, query.n);
  const tags = await mapLimited(items, PAGE_CONCURRENCY * 2, async (entry): Promise<TagRow> => {
    try {
      const key = `${name}@${entry.digest}`;
      let summary = summaries.get(key);
      if (!summary) summaries.set(key, (summary = await summarize(services.content, name, await services.content.manifest(name, { digest: parseDigest(entry.digest) }))));
      return { tag: entry.name, ...summary, pushed: entry.pushed };
    } catch (err) {
      return { tag: entry.name, error: (err as Error).message };
    }
  });
  const last = items[items.length - 1];
  const next = rows.length > query.n ? { last: query.sort === 'tag' ? last.name : `${last.value ?? ''},${last.name}` } : undefined;
  return { name, total: figures[0]?.tags ?? 0, tags, next };
}

function parseTagCursor(last: string, sort: SortKey): Keyset {
  if (sort === 'tag') return { name: last };
  const comma = last.lastIndexOf(',');
  const value = last.slice(0, comma);
  const numeric = sort === 'size';
  if (comma < 0 || (value === '' ? !MAY_LACK.has(sort) : numeric && !/^\d{1,16}$/.test(value))) {
    throw new RegistryError('UNSUPPORTED', `last: ${JSON.stringify(last)} is not a cursor of the tags by ${sort} (<${numeric ? 'bytes' : 'value'}>,<tag>, as the page's next gives it)`, { status: 400 });
  }
  return { name: last.slice(comma + 1), value: value === '' ? null : numeric ? Number(value) : value };
}

/** GET /ui/api/search?q=&n=: the metadata index's search (metadata/search.ts), over what the caller may pull */
async function search(req: FastifyRequest, services: Services): Promise<SearchAnswer> {
  const grant = await authorize(req, services, [CATALOG_ACCESS]);
  const reads = await indexReads(services, 'search');
  const q = queryValue(req, 'q') ?? '';
  if (q.length === 0 || q.length > 256) throw new RegistryError('UNSUPPORTED', 'q: the text to search for, 1 to 256 characters', { status: 400 });
  const { n } = parsePagination(req, { defaultN: 10, max: 100 });
  return reads.search.search(q, n, grant.lists);
}

/**
 * GET /ui/api/repositories/<name>/manifests/<tag or digest>: the manifest, its summary, its image
 * config, its children (an index), its referrers and the tags that name it.
 */
async function manifest(req: FastifyRequest, services: Services, state: RegistryState, name: string, reference: string): Promise<ManifestDetail> {
  const ref: Reference = reference.includes(':') ? { digest: parseDigest(reference) } : { tag: checkTag(reference) };
  const grant = await authorize(req, services, [pull(name)]);
  const stored = await services.content.manifest(name, ref);
  const doc = parseManifest(stored.content);
  const [summary, config, referrers, taggedAs, pushed, signers] = await Promise.all([
    summarize(services.content, name, stored),
    readConfig(services.content, name, doc),
    services.manifests.referrers(name, stored.digest).catch(() => []),
    tagsNaming(services, name, stored.digest),
    pushedAt(state, name, stored.digest),
    signedBy(services.pullGate, name, stored.digest),
  ]);
  let children: ManifestDetail['children'];
  if (isIndex(doc)) {
    children = await mapLimited(doc.manifests!, PAGE_CONCURRENCY, async (child) => {
      try {
        const summary = await summarize(services.content, name, await services.content.manifest(name, { digest: parseDigest(child.digest) }));
        // the platform the index names for the child, which a config-less child lacks
        const named = platformName(child.platform);
        return named ? { ...summary, platforms: [named] } : summary;
      } catch (err) {
        return { digest: child.digest, error: (err as Error).message };
      }
    });
  }
  return {
    name,
    digest: stored.digest,
    mediaType: stored.mediaType,
    bytes: stored.content.length,
    manifest: doc,
    summary,
    // shown field by field; a config that lacks one shows it as absent
    config: config as ImageConfig | undefined,
    children,
    referrers,
    tags: taggedAs,
    pushed,
    signedBy: signers,
    // a token names only what it was asked for (pull): the browser learns about delete by trying
    mayDelete: grant.allows({ type: 'repository', name, action: 'delete' }),
  };
}

/**
 * GET /ui/api/registry: version, storage, modes, health and the figures the registry keeps, for
 * those who may read the catalog (registry:catalog:*: everyone without auth, any signed-in user
 * with htpasswd, with tokens those granted the catalog). Failing checks are named, not explained
 * (their reasons may hold paths and addresses; /debug/health has them).
 */
async function registry(req: FastifyRequest, services: Services, state: RegistryState): Promise<RegistryAbout> {
  const grant = await authorize(req, services, [CATALOG_ACCESS]);
  const failing = (await state.health?.()) ?? {};
  // storage used, per top-level namespace the caller may see (the metadata index's usage.ts)
  const indexed = await indexedReads(services);
  const usage = indexed && (await indexed.usage.visibleTopLevel(grant.lists)).map(({ namespace, repositories, bytes }) => ({ namespace, repositories, bytes }));
  // the quotas whose every repository the caller may see (policies/quota.ts)
  const quotas = await services.quotas?.report((_policy, names) => names.every(grant.lists));
  return { ...state.about, healthy: Object.keys(failing).length === 0, failing: Object.keys(failing), notifications: state.notifications?.() ?? [], figures: state.figures?.() ?? {}, usage, quotas };
}

/** the tags (of the first TAG_SCAN_LIMIT; with the metadata index, of all: one range of an index) that name `digest` */
async function tagsNaming(services: Services, name: string, digest: string): Promise<{ tags: string[]; scanned: number; total: number }> {
  const reads = await indexedReads(services);
  if (reads) {
    const [tags, figures] = await Promise.all([reads.browse.tagsNaming(name, digest, TAG_SCAN_LIMIT), reads.browse.figures([name])]);
    const total = figures[0]?.tags ?? 0;
    return { tags, scanned: total, total };
  }
  const all = await services.content.tags(name).catch(() => [] as readonly string[]);
  const scanned = all.slice(0, TAG_SCAN_LIMIT);
  const resolved = await mapLimited(scanned, PAGE_CONCURRENCY * 2, (tag) => services.tags.resolve(name, tag).catch(() => undefined));
  return { tags: scanned.filter((_, i) => resolved[i] === digest), scanned: scanned.length, total: all.length };
}

/** when `tag` was last pushed (registry/activity.ts) */
async function tagPushed(state: RegistryState, name: string, tag: string): Promise<number | undefined> {
  return state.driver && readTagPushed(state.driver, name, tag);
}

/** when the revision was last pushed, as expiry and retention see it (registry/activity.ts) */
async function pushedAt(state: RegistryState, name: string, digest: string): Promise<string | undefined> {
  if (!state.driver || !isDigest(digest)) return undefined;
  const { pushed } = await readActivity(state.driver, name, digest).catch(() => ({ pushed: undefined }));
  return pushed === undefined ? undefined : new Date(pushed).toISOString();
}

/** the metadata index's reads once it holds all of storage; undefined: storage answers, as without an index */
async function indexedReads(services: Services): Promise<BrowseReads | undefined> {
  return services.browse && (await services.browse.inSync()) ? services.browse : undefined;
}
