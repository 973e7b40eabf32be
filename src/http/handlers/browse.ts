/**
 * berth's extensions of the V2 API (docs/api.md), answered from the metadata index, in the
 * distribution-spec's extension shape: registry-level `/v2/_berth/ext/<component>`,
 * repository-level `/v2/<name>/_berth/ext/<component>`, and `/v2/_oci/ext/discover` listing them.
 *
 * Access as in the V2 API (route-table.ts): a repository's tags and history need pull on it; the
 * registry-level answers need the catalog and hold only repositories the caller may pull. A
 * filtered page reads at most SCAN_BUDGET rows, as the catalog does (registry/visible-catalog.ts),
 * and a cursor that may name a hidden repository travels sealed.
 *
 * Without the index (storage-only operation) every extension answers 404 UNSUPPORTED saying so,
 * and discover lists none.
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
// types only: the index's modules (and Kysely) load only when the index is on (features/metadata.ts)
import type { Keyset, RepositoryFigures, RepositorySort, TagColumn } from '../../metadata/browse.js';
import { RegistryError } from '../../registry/errors.js';
import { checkTag, isRepositoryName } from '../../registry/names.js';
import { visibleRows } from '../../registry/visible-catalog.js';
import { queryValue } from '../body.js';
import type { BrowseReads, Handler, Services } from '../context.js';
import { grantOf } from '../grants.js';
import { DEFAULT_TAGS_PAGE, parsePagination } from '../pagination.js';
import type { Route } from '../routes.js';
import { nameUnknown } from '../../registry/repositories.js';

type Of<K extends Route['kind']> = Extract<Route, { kind: K }>;

/** the sorts each listing accepts, the default first */
const REPOSITORY_SORTS: readonly RepositorySort[] = ['name', 'size', 'pushed', 'pulls'];
const TAG_SORTS: readonly TagColumn[] = ['name', 'pushed', 'size', 'imageSize', 'created', 'platforms', 'mediaType', 'digest'];
/** the tag sorts a tag may have no value in (such tags come last; a cursor among them has an empty value) */
const TAG_SORTS_NULLABLE: ReadonlySet<TagColumn> = new Set(['imageSize', 'created', 'platforms', 'mediaType']);
/** results per kind of a search without `n`, and the most */
const SEARCH_PAGE = { defaultN: 20, max: 100 };
/** the longest search text (`q`) accepted */
const MAX_TEXT = 256;

const EXTENSION = '_berth';
const ENDPOINTS = ['_berth/ext/repositories', '_berth/ext/usage', '_berth/ext/search', '{name}/_berth/ext/tags', '{name}/_berth/ext/history'];

/** GET /v2/_oci/ext/discover: the extensions this registry answers (none without the index) */
export const getDiscover: Handler<Of<'discover'>> = async (_req, reply, _route, services) => {
  const extensions = services.browse
    ? // no `url`: the documentation is docs/api.md in berth's source, which has no public address
      [{ name: EXTENSION, description: "berth's metadata index: repositories with size, last push and pulls; sorted tag lists; usage; search; tag history (docs/api.md)", endpoints: ENDPOINTS }]
    : [];
  return json(reply, { extensions });
};

/** GET /v2/_berth/ext/repositories?n=&last=&sort=name|size|pushed|pulls&desc=1&q= */
export const getRepositories: Handler<Of<'ext-repositories'>> = async (req, reply, _route, services) => {
  const reads = await indexReads(services, `${EXTENSION}/ext/repositories`);
  const page = parsePagination(req, { defaultN: DEFAULT_TAGS_PAGE, max: services.options.pageMax });
  const sort = parseSort(req, REPOSITORY_SORTS, 'repositories');
  const desc = parseDesc(req);
  const q = (queryValue(req, 'q') ?? '').toLowerCase();
  if (q.length > MAX_TEXT) throw badParameter(`q: at most ${MAX_TEXT} characters`);
  const start = page.last === undefined ? undefined : parseCursor(services.catalogCursors.open(page.last), sort);
  const lists = grantOf(req).lists;
  const found =
    page.n === 0
      ? { rows: [], more: false }
      : await visibleRows<RepositoryFigures, Keyset>(
          (after, limit) => reads.browse.repositories({ sort, desc, after, limit }),
          (row) => keysetOf(row, sort),
          (row) => row.name.includes(q) && lists(row.name),
          page.n,
          start,
        );
  if (found.more) {
    const last = found.stoppedAt ? services.catalogCursors.seal(cursorText(found.stoppedAt)) : cursorText(keysetOf(found.rows[found.rows.length - 1], sort));
    reply.header('link', link(services, '/v2/_berth/ext/repositories', { n: String(page.n), last, sort, ...(desc && { desc: '1' }), ...(q && { q }) }));
  }
  return json(reply, { repositories: found.rows });
};

/** GET /v2/<name>/_berth/ext/tags?n=&last=&sort=name|pushed|size|imageSize|created|platforms|mediaType|digest&desc=1 */
export const getTagPage: Handler<Of<'ext-tags'>> = async (req, reply, route, services) => {
  const reads = await indexReads(services, `${EXTENSION}/ext/tags`);
  const page = parsePagination(req, { defaultN: DEFAULT_TAGS_PAGE, max: services.options.pageMax });
  const sort = parseSort(req, TAG_SORTS, 'tags');
  const desc = parseDesc(req);
  const after = page.last === undefined ? undefined : parseTagCursor(page.last, sort);
  if (!(await reads.browse.hasRepository(route.name))) throw nameUnknown(route.name);
  const rows = page.n === 0 ? [] : await reads.browse.sortedTags(route.name, { sort, desc, after, limit: page.n + 1 });
  const tags = rows.slice(0, page.n).map(({ value: _, ...tag }) => tag);
  if (rows.length > page.n) {
    const last = rows[page.n - 1];
    const cursor = sort === 'name' ? last.name : `${last.value ?? ''},${last.name}`;
    reply.header('link', link(services, `/v2/${route.name}/_berth/ext/tags`, { n: String(page.n), last: cursor, sort, ...(desc && { desc: '1' }) }));
  }
  return json(reply, { name: route.name, tags });
};

/** GET /v2/<name>/_berth/ext/history?tag=<tag>&n=&last=: what the tag named, newest first */
export const getHistory: Handler<Of<'ext-history'>> = async (req, reply, route, services) => {
  const reads = await indexReads(services, `${EXTENSION}/ext/history`);
  const tagParam = queryValue(req, 'tag');
  if (!tagParam) throw badParameter('tag: the tag whose history is wanted is required (?tag=latest)');
  const tag = checkTag(tagParam);
  const page = parsePagination(req, { defaultN: DEFAULT_TAGS_PAGE, max: services.options.pageMax });
  let before: { from: string; digest: string } | undefined;
  if (page.last !== undefined) {
    const [from, digest] = splitCursor(page.last);
    if (digest === undefined) throw badParameter(`last: ${JSON.stringify(page.last)} is not a cursor of the history (<from>,<digest>, as the Link header gives it)`);
    before = { from, digest };
  }
  const rows = page.n === 0 ? [] : await reads.history.tagHistory(route.name, tag, page.n + 1, before);
  if (rows.length === 0 && page.last === undefined && page.n > 0) {
    if (!(await reads.browse.hasRepository(route.name))) throw nameUnknown(route.name);
    throw new RegistryError('MANIFEST_UNKNOWN', `tag ${JSON.stringify(tag)} of ${route.name} has no history: it was never pushed while the index was on`, { detail: { tag } });
  }
  const history = rows.slice(0, page.n);
  if (rows.length > page.n) {
    const last = history[history.length - 1];
    reply.header('link', link(services, `/v2/${route.name}/_berth/ext/history`, { tag, n: String(page.n), last: `${last.from},${last.digest}` }));
  }
  return json(reply, { name: route.name, tag, history });
};

/**
 * GET /v2/_berth/ext/usage?namespace=<prefix>: the bytes the namespace's repositories use, each
 * blob and manifest once; without a namespace, each top-level namespace's. Only the repositories
 * the caller may pull are counted: one who sees part of a namespace gets that part's usage.
 */
export const getUsage: Handler<Of<'ext-usage'>> = async (req, reply, _route, services) => {
  const reads = await indexReads(services, `${EXTENSION}/ext/usage`);
  const raw = queryValue(req, 'namespace');
  if (!raw) return json(reply, { namespaces: await reads.usage.visibleTopLevel(grantOf(req).lists) });
  const namespace = raw.replace(/\/+$/, '');
  if (!isRepositoryName(namespace)) {
    throw new RegistryError('NAME_INVALID', `namespace: ${JSON.stringify(raw)} is not a repository name or a prefix of one ending at a "/" (e.g. team or team/)`, { detail: { namespace: raw } });
  }
  return json(reply, await reads.usage.visibleNamespace(namespace, grantOf(req).lists));
};

/** GET /v2/_berth/ext/search?q=&n=: repositories, tags, digests and label or annotation values */
export const getSearch: Handler<Of<'ext-search'>> = async (req, reply, _route, services) => {
  const reads = await indexReads(services, `${EXTENSION}/ext/search`);
  const q = queryValue(req, 'q') ?? '';
  if (q.length === 0) throw badParameter('q: the text to search for is required (?q=...)');
  if (q.length > MAX_TEXT) throw badParameter(`q: at most ${MAX_TEXT} characters`);
  const { n } = parsePagination(req, SEARCH_PAGE);
  const results = await reads.search.search(q, n, grantOf(req).lists);
  return json(reply, { query: q, ...results });
};

function json(reply: FastifyReply, body: unknown): FastifyReply {
  return reply.header('content-type', 'application/json; charset=utf-8').send(JSON.stringify(body));
}

/**
 * the metadata index's reads for `what` (an extension's path, the web interface's search): 404
 * UNSUPPORTED without the index, 503 UNAVAILABLE until it is built (a partial answer would read
 * as the registry's whole content)
 */
export async function indexReads(services: Services, what: string): Promise<BrowseReads> {
  const reads = services.browse;
  if (!reads) {
    throw new RegistryError('UNSUPPORTED', `${what} needs the metadata index, and this registry runs without it (metadata.enabled: false); the V2 API (_catalog, tags/list) still answers`, {
      status: 404,
    });
  }
  if (!(await reads.inSync())) {
    throw new RegistryError('UNAVAILABLE', `${what}: the metadata index is being built from storage (the first start over an existing root); try again shortly`);
  }
  return reads;
}

function badParameter(message: string): RegistryError {
  return new RegistryError('UNSUPPORTED', `bad query parameter: ${message}`, { status: 400 });
}

function parseSort<S extends string>(req: FastifyRequest, allowed: readonly S[], what: string): S {
  const sort = queryValue(req, 'sort');
  if (sort === undefined || sort === '') return allowed[0];
  if ((allowed as readonly string[]).includes(sort)) return sort as S;
  throw badParameter(`sort: ${what} sort by ${allowed.join(', ')}, not ${JSON.stringify(sort)}`);
}

function parseDesc(req: FastifyRequest): boolean {
  const desc = queryValue(req, 'desc');
  if (desc === undefined || desc === '' || desc === '0') return false;
  if (desc === '1') return true;
  throw badParameter(`desc: 1 for descending, 0 or absent for ascending, not ${JSON.stringify(desc)}`);
}

/**
 * A page's `last`: the name when sorting by name; `<value>,<name>` for another sort (neither a
 * name, a tag nor a time holds a comma), as the Link header gives it.
 */
function parseCursor(last: string, sort: RepositorySort): Keyset {
  if (sort === 'name') return { name: last };
  const [value, name] = splitCursor(last);
  const numeric = sort === 'size' || sort === 'pulls';
  if (name === undefined || (numeric && !/^\d{1,16}$/.test(value))) {
    throw badParameter(`last: ${JSON.stringify(last)} is not a cursor of sort=${sort} (<${numeric ? 'number' : 'time'}>,<name>, as the Link header gives it)`);
  }
  return { name, value: numeric ? Number(value) : value };
}

/**
 * A tag page's `last`: the tag when sorting by name, else `<value>,<tag>` split at the last comma
 * (a tag holds none; a value may: the platforms), the value empty among the tags without one.
 */
function parseTagCursor(last: string, sort: TagColumn): Keyset {
  if (sort === 'name') return { name: last };
  const comma = last.lastIndexOf(',');
  const value = last.slice(0, comma);
  const numeric = sort === 'size' || sort === 'imageSize';
  if (comma < 0 || (value === '' ? !TAG_SORTS_NULLABLE.has(sort) : numeric && !/^\d{1,16}$/.test(value))) {
    throw badParameter(`last: ${JSON.stringify(last)} is not a cursor of sort=${sort} (<${numeric ? 'number' : 'value'}>,<tag>, as the Link header gives it)`);
  }
  return { name: last.slice(comma + 1), value: value === '' ? null : numeric ? Number(value) : value };
}

function splitCursor(last: string): [string, string | undefined] {
  const comma = last.indexOf(',');
  return comma < 0 ? [last, undefined] : [last.slice(0, comma), last.slice(comma + 1)];
}

function cursorText(at: Keyset): string {
  return at.value === undefined ? at.name : `${at.value},${at.name}`;
}

function keysetOf(row: RepositoryFigures, sort: RepositorySort): Keyset {
  const value = { name: undefined, size: row.size, pushed: row.pushed ?? '', pulls: row.pulls }[sort];
  return value === undefined ? { name: row.name } : { name: row.name, value };
}

function link(services: Services, path: string, params: Record<string, string>): string {
  return `<${services.options.prefix}${path}?${new URLSearchParams(params).toString()}>; rel="next"`;
}
