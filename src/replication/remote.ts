/**
 * The remote registry of a rule, over the pull-through cache's client (proxy/upstream.ts: its
 * deadlines, its anonymous / Basic / Bearer handling, the hosts that may get the credentials).
 * What this adds: the listings (catalog, tags, referrers), manifests read and checked against
 * their digest, and the writes of push replication. Every request is counted, so a run can say
 * what it fetched.
 */
import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import { UpstreamError } from '../proxy/errors.js';
import { Upstream, type UpstreamRequest, type UpstreamResponse } from '../proxy/upstream.js';
import { digestAlgorithm, digestBytes, isDigest, type Digest } from '../registry/digest.js';
import { MANIFEST_LIMIT, supportedManifestMediaTypes, type Descriptor } from '../registry/manifests/index.js';
import type { RemoteOptions } from './rules.js';

/** what a remote request may take until its answer's headers (a blob's whole upload for a PUT) */
const TIMEOUTS = { checkTimeoutMs: 15_000, fetchTimeoutMs: 60_000, uploadTimeoutMs: 30 * 60_000 };
/** the largest listing read (catalog page, tag list, referrers index) */
const LISTING_LIMIT = 16 * 1024 * 1024;
const OCI_INDEX = 'application/vnd.oci.image.index.v1+json';
const MANIFEST_ACCEPT = [...new Set([...supportedManifestMediaTypes(), OCI_INDEX])].join(', ');

export interface RemoteManifest {
  digest: Digest;
  mediaType: string;
  body: Buffer;
}

/** requests sent to the remote, by kind */
export interface RemoteCounts {
  requests: number;
  manifestGets: number;
  blobGets: number;
  blobBytes: number;
}

export class Remote {
  readonly host: string;
  readonly counts: RemoteCounts = { requests: 0, manifestGets: 0, blobGets: 0, blobBytes: 0 };
  private readonly upstream: Upstream;

  constructor(options: RemoteOptions, logger: Logger, rule?: { name: string; direction: 'pull' | 'push' }) {
    const client = rule && { name: `replication rule ${rule.name}`, keys: `replication[name=${rule.name}].${rule.direction}`, may: rule.direction === 'pull' ? 'pull its repositories' : 'push to its repositories' };
    this.upstream = new Upstream({ remoteurl: options.url, username: options.username, password: options.password, realmhosts: options.realmhosts, redirecthosts: options.redirecthosts, client, ...TIMEOUTS }, logger);
    this.host = this.upstream.host;
  }

  private request(req: UpstreamRequest): Promise<UpstreamResponse> {
    this.counts.requests++;
    return this.upstream.request(req);
  }

  /** the remote's repositories, page by page (its catalog) */
  async *catalog(signal?: AbortSignal): AsyncIterable<string> {
    let path: string | undefined = '_catalog?n=1000';
    while (path) {
      const res = await this.request({ method: 'GET', repository: '', scope: 'registry:catalog:*', path, timeoutMs: TIMEOUTS.checkTimeoutMs, signal });
      if (res.status === 404) {
        res.cancel();
        throw new UpstreamError(`the remote registry ${this.host} has no catalog (404): name the repositories without wildcards`);
      }
      const body = (await this.upstream.readJson(res, LISTING_LIMIT, 'catalog')) as { repositories?: unknown };
      if (Array.isArray(body?.repositories)) yield* body.repositories.filter((name): name is string => typeof name === 'string');
      path = this.nextPage(res);
    }
  }

  /** the repository's tags; none when the remote does not have it */
  async tags(name: string, signal?: AbortSignal): Promise<string[]> {
    const tags: string[] = [];
    let path: string | undefined = `${name}/tags/list?n=1000`;
    while (path) {
      const res = await this.request({ method: 'GET', repository: name, path, timeoutMs: TIMEOUTS.checkTimeoutMs, signal });
      if (res.status === 404) {
        res.cancel();
        return tags;
      }
      const body = (await this.upstream.readJson(res, LISTING_LIMIT, 'tag list')) as { tags?: unknown };
      if (Array.isArray(body?.tags)) tags.push(...body.tags.filter((tag): tag is string => typeof tag === 'string'));
      path = this.nextPage(res);
    }
    return tags;
  }

  /** the `Link: <...>; rel="next"` of a listing, as a path below /v2/ on the remote's own origin */
  private nextPage(res: UpstreamResponse): string | undefined {
    const link = res.headers.get('link')?.match(/<([^>]+)>\s*;\s*rel="?next"?/);
    if (!link) return undefined;
    const next = new URL(link[1], res.url);
    const base = this.upstream.baseURL;
    if (next.origin !== base.origin || !next.pathname.startsWith(base.pathname)) throw new UpstreamError(`the remote registry ${this.host} named its next page on another site; not followed`);
    return next.pathname.slice(base.pathname.length) + next.search;
  }

  /** the digest a tag (or digest) names on the remote, from a HEAD; undefined when it has none */
  async manifestDigest(name: string, reference: string, signal?: AbortSignal): Promise<Digest | undefined> {
    const res = await this.request({ method: 'HEAD', repository: name, path: `${name}/manifests/${reference}`, headers: { accept: MANIFEST_ACCEPT }, timeoutMs: TIMEOUTS.checkTimeoutMs, signal });
    res.cancel();
    if (res.status === 404) return undefined;
    const digest = res.headers.get('docker-content-digest') ?? res.headers.get('registry-content-digest');
    if (digest && isDigest(digest)) return digest;
    // a remote that does not say: the body tells
    return (await this.manifest(name, reference, signal))?.digest;
  }

  /** the manifest's bytes, checked against the digest asked for; undefined when the remote has none */
  async manifest(name: string, reference: string, signal?: AbortSignal): Promise<RemoteManifest | undefined> {
    this.counts.manifestGets++;
    const res = await this.request({ method: 'GET', repository: name, path: `${name}/manifests/${reference}`, headers: { accept: MANIFEST_ACCEPT }, timeoutMs: TIMEOUTS.fetchTimeoutMs, signal });
    if (res.status === 404) {
      res.cancel();
      return undefined;
    }
    const mediaType = (res.headers.get('content-type') ?? '').split(';')[0].trim();
    const body = await this.upstream.readBounded(res, MANIFEST_LIMIT, 'manifest');
    const said = res.headers.get('docker-content-digest') ?? res.headers.get('registry-content-digest');
    const algorithm = isDigest(reference) ? digestAlgorithm(reference) : said && isDigest(said) ? digestAlgorithm(said) : 'sha256';
    const digest = digestBytes(algorithm, body);
    const expected = isDigest(reference) ? reference : said && isDigest(said) ? said : undefined;
    // a first-generation signed manifest's digest covers its payload only: the parse checks it
    if (expected && expected !== digest && !mediaType.includes('prettyjws')) {
      throw new UpstreamError(`the remote registry ${this.host} answered ${name}:${reference} with bytes of ${digest}, not ${expected}; nothing was stored`);
    }
    return { digest: expected ?? digest, mediaType, body };
  }

  /** the blob's bytes (redirects to allowed hosts followed); the caller reads or cancels the body */
  async blob(name: string, digest: Digest, signal?: AbortSignal): Promise<UpstreamResponse> {
    this.counts.blobGets++;
    const res = await this.request({ method: 'GET', repository: name, path: `${name}/blobs/${digest}`, timeoutMs: TIMEOUTS.fetchTimeoutMs, signal, followRedirects: true });
    if (res.status === 404) {
      res.cancel();
      throw new UpstreamError(`the remote registry ${this.host} has no blob ${digest} in ${name}, which a manifest there references`);
    }
    const size = Number(res.headers.get('content-length') ?? NaN);
    if (Number.isSafeInteger(size)) this.counts.blobBytes += size;
    return res;
  }

  /**
   * The referrers of `digest` by the OCI 1.1 API; undefined when the remote does not have the API
   * (Distribution 2.8 answers 404: the caller falls back to the tag schema).
   */
  async referrers(name: string, digest: Digest, signal?: AbortSignal): Promise<Descriptor[] | undefined> {
    const res = await this.request({ method: 'GET', repository: name, path: `${name}/referrers/${digest}`, headers: { accept: OCI_INDEX }, timeoutMs: TIMEOUTS.checkTimeoutMs, signal });
    const type = res.headers.get('content-type') ?? '';
    if (res.status === 404 || !type.startsWith(OCI_INDEX)) {
      res.cancel();
      return undefined;
    }
    const body = (await this.upstream.readJson(res, LISTING_LIMIT, 'referrers index')) as { manifests?: unknown };
    return Array.isArray(body?.manifests) ? body.manifests.filter((d): d is Descriptor => typeof d?.digest === 'string' && isDigest(d.digest)) : [];
  }

  // --- writes (push replication) ---

  private pushScope(name: string): string {
    return `repository:${name}:pull,push`;
  }

  /** true when the remote's repository has the blob (HEAD) */
  async hasBlob(name: string, digest: Digest, signal?: AbortSignal): Promise<boolean> {
    const res = await this.request({ method: 'HEAD', repository: name, scope: this.pushScope(name), path: `${name}/blobs/${digest}`, timeoutMs: TIMEOUTS.checkTimeoutMs, signal });
    res.cancel();
    return res.ok;
  }

  /** true when the remote's repository has the manifest (HEAD by digest) */
  async hasManifest(name: string, digest: Digest, signal?: AbortSignal): Promise<boolean> {
    const res = await this.request({ method: 'HEAD', repository: name, scope: this.pushScope(name), path: `${name}/manifests/${digest}`, headers: { accept: MANIFEST_ACCEPT }, timeoutMs: TIMEOUTS.checkTimeoutMs, signal });
    res.cancel();
    return res.ok;
  }

  /** uploads a blob: POST, then one PUT of its bytes to the Location (which must stay on the remote's origin) */
  async pushBlob(name: string, digest: Digest, size: number, open: () => Promise<Readable>, signal?: AbortSignal): Promise<void> {
    const started = await this.request({ method: 'POST', repository: name, scope: this.pushScope(name), path: `${name}/blobs/uploads/`, timeoutMs: TIMEOUTS.checkTimeoutMs, signal });
    started.cancel();
    const location = started.headers.get('location');
    if (started.status !== 202 || !location) throw new UpstreamError(`the remote registry ${this.host} answered ${started.status} to the start of an upload to ${name}`);
    const target = new URL(location, started.url);
    if (target.origin !== this.upstream.baseURL.origin) throw new UpstreamError(`the remote registry ${this.host} named an upload location on another site (${target.origin}); nothing was sent there`);
    target.searchParams.set('digest', digest);
    const body = await open();
    const done = await this.request({
      method: 'PUT',
      repository: name,
      scope: this.pushScope(name),
      path: target.href,
      headers: { 'content-type': 'application/octet-stream', 'content-length': String(size) },
      body: () => body,
      timeoutMs: TIMEOUTS.uploadTimeoutMs,
      signal,
    });
    done.cancel();
    if (done.status !== 201) throw new UpstreamError(`the remote registry ${this.host} answered ${done.status} to the upload of ${digest} to ${name}`);
  }

  async putManifest(name: string, reference: string, mediaType: string, content: Buffer, signal?: AbortSignal): Promise<void> {
    const res = await this.request({
      method: 'PUT',
      repository: name,
      scope: this.pushScope(name),
      path: `${name}/manifests/${reference}`,
      headers: { 'content-type': mediaType },
      body: () => content,
      timeoutMs: TIMEOUTS.fetchTimeoutMs,
      signal,
    });
    res.cancel();
    if (res.status !== 201) throw new UpstreamError(`the remote registry ${this.host} answered ${res.status} to the manifest ${name}:${reference}`);
  }

  /**
   * A referrer just pushed, on a remote without the referrers API (Distribution 2.8): added to
   * the tag schema's index `<alg>-<subject hex>` as a client of such a registry does (OCI
   * distribution-spec 1.1), so the remote's clients find it. Nothing when the remote has the API.
   */
  async addToReferrersTag(name: string, subject: Digest, referrer: Descriptor, signal?: AbortSignal): Promise<void> {
    if ((await this.referrers(name, subject, signal)) !== undefined) return;
    const tag = subject.replace(':', '-');
    const current = await this.manifest(name, tag, signal);
    let index: { schemaVersion: 2; mediaType: string; manifests: Descriptor[] } = { schemaVersion: 2, mediaType: OCI_INDEX, manifests: [] };
    if (current) {
      try {
        const parsed = JSON.parse(current.body.toString('utf8')) as typeof index;
        if (Array.isArray(parsed.manifests)) index = { ...parsed, manifests: parsed.manifests };
      } catch {
        // not an index: replaced by one
      }
    }
    if (index.manifests.some((d) => d.digest === referrer.digest)) return;
    index.manifests.push(Object.fromEntries(Object.entries(referrer).filter(([, v]) => v !== undefined)) as Descriptor);
    await this.putManifest(name, tag, OCI_INDEX, Buffer.from(JSON.stringify(index)), signal);
  }

  /** deletes a manifest by digest; one the remote does not have is already gone */
  async deleteManifest(name: string, digest: Digest, signal?: AbortSignal): Promise<void> {
    const res = await this.request({ method: 'DELETE', repository: name, scope: `repository:${name}:delete,pull,push`, path: `${name}/manifests/${digest}`, timeoutMs: TIMEOUTS.checkTimeoutMs, signal });
    res.cancel();
  }
}
