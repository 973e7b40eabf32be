/**
 * The pull-through cache as a content source: manifests, blobs and tags come from storage when it
 * holds them and from the upstream otherwise, and what is fetched is stored as a push would store
 * it (revision, tag, blob linked into the repository), so the cache is an ordinary registry root.
 *
 * - Manifest by tag: the upstream is asked for the tag's digest (HEAD); the cached copy is served
 *   when it is the same, else the new one is fetched by digest, verified and stored. When the
 *   upstream does not answer in time, fails or refuses, the cached copy is served; its 404 is a 404.
 *   Concurrent pulls of one uncached manifest share one fetch.
 * - Manifest by digest, blob: storage first (content-addressed, never stale), else the upstream.
 * - Blob stat (HEAD, and before a GET): storage, the fetch under way, or the upstream's HEAD. A
 *   blob is linked into a repository only once bytes from the upstream hashed to its digest, even
 *   when storage holds it for another repository.
 * - Range of a blob not cached: served from the upstream's own range answer, not cached.
 * - Tags: the upstream's list (every page) when it answers, else the cached tags.
 * - Referrers: asked of the upstream every time, as a tag is: its referrers API, or the referrers
 *   tag schema's index when it has no API (404). Every referrer listed is fetched by digest into
 *   the cache, and the answer is read from what is stored (berth's referrers index), so it lists
 *   only verified manifests whose subject is the digest. When the upstream fails or refuses, the
 *   referrers stored so far stand in; with none stored, the client gets the upstream's failure.
 */
import type { AuditSink } from '../audit/record.js';
import { Readable } from 'node:stream';
import type { Logger } from 'pino';
import type { BlobStore } from '../registry/blobs.js';
import { blobUnknown } from '../registry/blobs.js';
import type { BlobStat, ByteRange, ContentSource } from '../registry/content.js';
import { digestAlgorithm, isDigest, type Digest } from '../registry/digest.js';
import { RegistryError } from '../registry/errors.js';
import type { ListingPage, PageBounds } from '../registry/indexing/listing-source.js';
import type { ManifestStore, Reference, StoredManifest } from '../registry/manifest-store.js';
import { MANIFEST_LIMIT, MediaTypes, parseManifest, supportedManifestMediaTypes, type Descriptor } from '../registry/manifests/index.js';
import { mapLimited } from '../registry/pool.js';
import { pageOf } from '../registry/pages.js';
import type { LateConfigs } from '../registry/indexing/late-configs.js';
import type { BlobFetches } from './blob-fetch.js';
import type { ProxyStats } from './stats.js';
import { describe, isUpstreamFailure, rethrowUpstream, UpstreamError } from './errors.js';
import { listedReferrers, NotAReferrersList, referrersTag } from './referrers.js';
import type { Upstream, UpstreamResponse } from './upstream.js';

const TAGS_PAGE = 1000;
/** the largest page of tags read (1000 tags of 128 characters are 130 KiB; some upstreams send every tag at once) */
const TAGS_PAGE_LIMIT = 4 * 1024 * 1024;
/** an upstream that pages its tag list forever is not followed past this many pages */
const MAX_TAG_PAGES = 1000;
/** referrer manifests fetched at once for one referrers answer */
const REFERRER_FETCHES = 4;

export interface CacheTimeouts {
  checkTimeoutMs: number;
  fetchTimeoutMs: number;
}

export class PullThroughCache implements ContentSource {
  private readonly accept = supportedManifestMediaTypes().join(', ');
  /** manifest fetches under way, by repository and tag or digest: concurrent pulls share one */
  private readonly manifestFetches = new Map<string, Promise<StoredManifest>>();

  constructor(
    private readonly upstream: Upstream,
    private readonly stored: ContentSource,
    /** a manifest store that takes manifests before their blobs */
    private readonly manifests: ManifestStore,
    private readonly blobs: BlobStore,
    private readonly fetches: BlobFetches,
    private readonly logger: Logger,
    private readonly timeouts: CacheTimeouts,
    private readonly stats: ProxyStats,
    /** with the metadata index: manifests fetched before their image configuration, described again once it is */
    private readonly lateConfigs?: LateConfigs,
    /** the audit log, told of each manifest and whole blob stored from the upstream (`proxy-fill`) */
    private readonly audit?: { sink: AuditSink; upstream: string },
  ) {}

  private filled(repository: string, target: string, what: string): void {
    this.audit?.sink.record({ actor: undefined, action: 'proxy-fill', repository, target, outcome: 'ok', detail: `${what} fetched from ${this.audit.upstream}` });
  }

  async manifest(name: string, reference: Reference): Promise<StoredManifest> {
    this.stats.manifestRequests++;
    if ('digest' in reference) {
      if (await this.manifests.hasRevision(name, reference.digest)) return this.hit(this.stored.manifest(name, reference));
      return this.fetchManifest(name, reference.digest, reference).catch(rethrowUpstream(`manifest ${reference.digest}`));
    }
    let digest: Digest | undefined;
    try {
      digest = await this.upstreamTag(name, reference.tag);
    } catch (err) {
      if (!isUpstreamFailure(err)) throw err;
      return this.hit(this.stored.manifest(name, reference)).catch((cacheErr: unknown) => {
        if (cacheErr instanceof RegistryError && (cacheErr.code === 'MANIFEST_UNKNOWN' || cacheErr.code === 'NAME_UNKNOWN')) rethrowUpstream(`tag ${reference.tag} of ${name}`)(err);
        throw cacheErr;
      });
    }
    if (digest && (await this.manifests.hasRevision(name, digest))) {
      const cached = await this.stored.manifest(name, { digest });
      // the tag moved back to a revision the cache holds: point it there as a pull of it would
      const current = await this.stored.manifest(name, reference).catch(() => undefined);
      if (current?.digest !== digest) await this.manifests.put(name, reference, cached.mediaType, cached.content);
      this.stats.manifestHits++;
      return cached;
    }
    return this.fetchManifest(name, digest ?? reference.tag, reference).catch(rethrowUpstream(`tag ${reference.tag} of ${name}`));
  }

  async statBlob(name: string, digest: Digest): Promise<BlobStat> {
    if (await this.blobs.isLinked(name, digest)) {
      const size = await this.blobs.storedSize(digest);
      if (size !== undefined) return { digest, size, stored: true };
    }
    const underway = await this.fetches.underway(digest);
    if (underway) return { digest, size: underway.size, stored: false };
    const res = await this.upstream
      .request({ method: 'HEAD', repository: name, path: `${name}/blobs/${digest}`, timeoutMs: this.timeouts.checkTimeoutMs })
      .catch(rethrowUpstream(`blob ${digest}`));
    if (res.status === 404) throw blobUnknown(digest);
    const size = Number(res.headers.get('content-length'));
    if (!Number.isSafeInteger(size) || size < 0) throw new UpstreamError(`the upstream registry ${this.upstream.host} gave no size for ${digest}`);
    this.fetches.declared(digest, size);
    // not linked on the upstream's word, even when storage holds the digest (another repository's,
    // maybe a private one): only bytes from this upstream that hashed to it link it (blob-fetch.ts)
    return { digest, size, stored: false };
  }

  async openBlob(name: string, digest: Digest, range?: ByteRange): Promise<Readable> {
    this.stats.blobRequests++;
    if (await this.blobs.isLinked(name, digest)) {
      const stored = await this.stored.openBlob(name, digest, range).catch(() => undefined);
      if (stored) {
        this.stats.blobHits++;
        return stored;
      }
    }
    this.stats.blobMisses++;
    if (!range) {
      const body = await this.fetches.open(name, digest);
      const late = this.lateConfigs;
      // the whole body was served: the blob is stored (a configuration a manifest's record waited for, maybe)
      if (late) body.once('end', () => late.blobFilled(name, digest).catch((err: unknown) => this.logger.warn({ err, repository: name, digest }, 'could not describe a cached manifest again in the metadata index (the reconciler will)')));
      if (this.audit) body.once('end', () => this.filled(name, digest, 'blob'));
      return body;
    }
    return this.upstreamRange(name, digest, range).catch(rethrowUpstream(`blob ${digest}`));
  }

  async tags(name: string): Promise<readonly string[]> {
    try {
      return await this.upstreamTags(name);
    } catch (err) {
      if (!isUpstreamFailure(err)) throw err;
      this.logger.info({ repository: name, reason: describe(err) }, 'tags listed from the cache');
      return this.stored.tags(name);
    }
  }

  async referrers(name: string, subject: Digest, artifactType?: string): Promise<Descriptor[]> {
    let listed: Digest[];
    try {
      listed = await this.upstreamReferrers(name, subject);
    } catch (err) {
      if (!isUpstreamFailure(err)) throw err;
      const cached = await this.manifests.referrers(name, subject);
      // an empty list would read as "not signed": the client hears that the upstream failed
      if (cached.length === 0) rethrowUpstream(`the referrers list of ${subject}`)(err);
      this.logger.info({ repository: name, subject, reason: describe(err) }, 'referrers listed from the cache');
      return ofType(cached, artifactType);
    }
    await mapLimited(listed, REFERRER_FETCHES, (digest) => this.cacheReferrer(name, digest));
    const stored = new Map((await this.manifests.referrers(name, subject)).map((d) => [d.digest, d]));
    return ofType(listed.flatMap((digest) => stored.get(digest) ?? []), artifactType);
  }

  /** the referrers the upstream lists (unfiltered: one answer serves every artifactType); 404 is the tag schema's turn */
  private async upstreamReferrers(name: string, subject: Digest): Promise<Digest[]> {
    const timeoutMs = this.timeouts.checkTimeoutMs;
    const res = await this.upstream.request({
      method: 'GET',
      repository: name,
      path: `${name}/referrers/${subject}`,
      headers: { accept: MediaTypes.ociIndex },
      timeoutMs,
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (res.status === 404) {
      res.cancel();
      return this.tagSchemaReferrers(name, subject);
    }
    return this.listed(name, subject, await this.upstream.readJson(res, MANIFEST_LIMIT, 'referrers list'));
  }

  /** an upstream without the referrers API: the index its clients keep under the tag `<alg>-<hex>`; no such tag, no referrers */
  private async tagSchemaReferrers(name: string, subject: Digest): Promise<Digest[]> {
    const timeoutMs = this.timeouts.checkTimeoutMs;
    const res = await this.upstream.request({
      method: 'GET',
      repository: name,
      path: `${name}/manifests/${referrersTag(subject)}`,
      headers: { accept: this.accept },
      timeoutMs,
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (res.status === 404) {
      res.cancel();
      return [];
    }
    return this.listed(name, subject, await this.upstream.readJson(res, MANIFEST_LIMIT, 'referrers tag index'));
  }

  private listed(name: string, subject: Digest, body: unknown): Digest[] {
    try {
      return listedReferrers(body);
    } catch (err) {
      if (!(err instanceof NotAReferrersList)) throw err;
      this.logger.warn({ repository: name, subject, reason: err.message }, 'the upstream answered a referrers request with something that is not a referrers list; nothing was cached');
      throw new UpstreamError(`the upstream registry ${this.upstream.host} answered the referrers request for ${subject} in ${name} with something that is not a referrers list (${err.message}); nothing was cached`);
    }
  }

  /**
   * a listed referrer into the cache, verified by its digest; one the upstream cannot serve, or
   * the store refuses, is left out of the answer (storage's own failures are the client's)
   */
  private async cacheReferrer(name: string, digest: Digest): Promise<void> {
    if (await this.manifests.hasRevision(name, digest)) return;
    await this.fetchManifest(name, digest, { digest }).catch((err: unknown) => {
      if (!isUpstreamFailure(err) && !(err instanceof RegistryError)) throw err;
      this.logger.warn({ repository: name, digest, reason: describe(err) }, 'a referrer the upstream listed could not be fetched; left out of the answer');
    });
  }

  /** the upstream's list (or the cache's, as tags()), paged here */
  async tagPage(name: string, page: PageBounds): Promise<ListingPage> {
    return pageOf(await this.tags(name), page);
  }

  /** the tag's digest upstream (undefined when its answer names none), or 404 MANIFEST_UNKNOWN */
  private async upstreamTag(name: string, tag: string): Promise<Digest | undefined> {
    const res = await this.upstream.request({
      method: 'HEAD',
      repository: name,
      path: `${name}/manifests/${tag}`,
      headers: { accept: this.accept },
      timeoutMs: this.timeouts.checkTimeoutMs,
    });
    if (res.status === 404) throw manifestUnknown(name, `tag ${JSON.stringify(tag)}`, { tag });
    const digest = res.headers.get('docker-content-digest') ?? '';
    return isDigest(digest) ? digest : undefined;
  }

  /** fetches, verifies and stores a manifest (`ref` a digest, or a tag when the upstream named no digest); one fetch for concurrent pulls */
  private fetchManifest(name: string, ref: string, reference: Reference): Promise<StoredManifest> {
    const key = `${name}\n${'tag' in reference ? `tag ${reference.tag}` : reference.digest}\n${ref}`;
    const underway = this.manifestFetches.get(key);
    if (underway) return underway;
    const fetching = this.fetchAndStoreManifest(name, ref, reference).finally(() => this.manifestFetches.delete(key));
    this.manifestFetches.set(key, fetching);
    return fetching;
  }

  private async fetchAndStoreManifest(name: string, ref: string, reference: Reference): Promise<StoredManifest> {
    const res = await this.upstream.request({
      method: 'GET',
      repository: name,
      path: `${name}/manifests/${ref}`,
      headers: { accept: this.accept },
      timeoutMs: this.timeouts.fetchTimeoutMs,
      signal: AbortSignal.timeout(this.timeouts.fetchTimeoutMs), // the body too: a manifest is small
    });
    const what = 'tag' in reference ? `tag ${JSON.stringify(reference.tag)}` : reference.digest;
    if (res.status === 404) {
      res.cancel();
      throw manifestUnknown(name, what, 'tag' in reference ? { tag: reference.tag } : { digest: reference.digest });
    }
    const body = await this.upstream.readBounded(res, MANIFEST_LIMIT, 'manifest');
    const contentType = res.headers.get('content-type') ?? undefined;
    const algorithm = isDigest(ref) ? digestAlgorithm(ref) : 'sha256';
    const parsed = await parseManifest(contentType, body, { algorithm }).catch((err: unknown) => {
      throw this.badManifest(name, what, describe(err));
    });
    if (isDigest(ref) && parsed.digest !== ref) throw this.badManifest(name, what, `its digest is ${parsed.digest}, not ${ref}`);
    await this.manifests.put(name, reference, contentType, body);
    await this.lateConfigs?.manifestFilled(name, parsed.digest, body);
    this.stats.manifestMisses++;
    this.stats.manifestBytesFetched += body.length;
    this.logger.info({ repository: name, reference: 'tag' in reference ? reference.tag : reference.digest, digest: parsed.digest }, 'fetched manifest from the upstream');
    this.filled(name, 'tag' in reference ? reference.tag : parsed.digest, `manifest ${parsed.digest}`);
    return { digest: parsed.digest, mediaType: parsed.mediaType, content: body };
  }

  /** a manifest served from the cache */
  private async hit(served: Promise<StoredManifest>): Promise<StoredManifest> {
    const manifest = await served;
    this.stats.manifestHits++;
    return manifest;
  }

  private badManifest(name: string, what: string, reason: string): UpstreamError {
    this.logger.warn({ repository: name, reference: what, reason }, 'the upstream served a manifest that does not check out; nothing was cached');
    return new UpstreamError(`the upstream registry ${this.upstream.host} served ${what} of ${name} in a form that does not check out (${reason}); nothing was cached`);
  }

  private async upstreamRange(name: string, digest: Digest, range: ByteRange): Promise<Readable> {
    const res = await this.upstream.request({
      method: 'GET',
      repository: name,
      path: `${name}/blobs/${digest}`,
      headers: { range: `bytes=${range.offset}-${range.offset + range.length - 1}` },
      timeoutMs: this.timeouts.fetchTimeoutMs,
      followRedirects: true,
    });
    if (res.status === 404) {
      res.cancel();
      throw blobUnknown(digest);
    }
    // an upstream that ignores Range answers 200 with the whole blob: cut the range out of it
    const skip = res.status === 206 ? 0 : range.offset;
    return Readable.from(slice(res.body as AsyncIterable<Uint8Array>, skip, range.length));
  }

  /** every page of the upstream's tag list, sorted by code unit; 404 NAME_UNKNOWN */
  private async upstreamTags(name: string): Promise<readonly string[]> {
    const tags = new Set<string>();
    let path: string | undefined = `${name}/tags/list?n=${TAGS_PAGE}`;
    for (let page = 0; path && page < MAX_TAG_PAGES; page++) {
      const timeoutMs = this.timeouts.checkTimeoutMs;
      const res: UpstreamResponse = await this.upstream.request({ method: 'GET', repository: name, path, timeoutMs, signal: AbortSignal.timeout(timeoutMs) });
      if (res.status === 404) {
        res.cancel();
        throw new RegistryError('NAME_UNKNOWN', `repository name not known to the upstream registry ${this.upstream.host}: ${name}`, { detail: { name } });
      }
      const body = (await this.upstream.readJson(res, TAGS_PAGE_LIMIT, 'tag list')) as { tags?: unknown } | null;
      if (Array.isArray(body?.tags)) for (const tag of body.tags) if (typeof tag === 'string') tags.add(tag);
      path = nextPage(res.headers.get('link'));
    }
    return [...tags].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
  }
}

function ofType(descriptors: Descriptor[], artifactType: string | undefined): Descriptor[] {
  return artifactType === undefined ? descriptors : descriptors.filter((d) => d.artifactType === artifactType);
}

function manifestUnknown(name: string, what: string, detail: unknown): RegistryError {
  return new RegistryError('MANIFEST_UNKNOWN', `manifest unknown: ${what} is not in ${name} (upstream)`, { detail });
}

/** the path below /v2/ of a Link header's next page, e.g. `</v2/a/tags/list?n=2&last=b>; rel="next"` */
function nextPage(link: string | null): string | undefined {
  const target = link && /<([^>]+)>\s*;\s*rel="?next"?/.exec(link)?.[1];
  if (!target) return undefined;
  const url = new URL(target, 'http://upstream.invalid');
  const at = url.pathname.indexOf('/v2/');
  return at < 0 ? undefined : url.pathname.slice(at + 4) + url.search;
}

/** `length` bytes of `body` after the first `skip` */
async function* slice(body: AsyncIterable<Uint8Array>, skip: number, length: number): AsyncGenerator<Buffer> {
  let left = length;
  for await (const chunk of body) {
    let buffer = Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength);
    if (skip > 0) {
      const dropped = Math.min(skip, buffer.length);
      skip -= dropped;
      buffer = buffer.subarray(dropped);
    }
    if (buffer.length === 0) continue;
    yield buffer.subarray(0, left);
    left -= Math.min(left, buffer.length);
    if (left === 0) return;
  }
}
