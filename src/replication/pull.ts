/**
 * One run of a pull rule: the remote's repositories (catalog, or the rule's literal names) and
 * tags are filtered by the rule; each selected image is copied with every child of an index
 * (or the rule's platforms), its blobs and its referrers (cosign's `.sig`/`.att`/`.sbom` tags,
 * and the OCI 1.1 referrers API or, on a remote without it, the tag schema's `sha256-<hex>` index).
 *
 * Everything goes through the core's stores in the order a push takes (blobs, children, the
 * manifest, then its tag), so a run cut short (a crash) leaves nothing half-visible and the next
 * run skips what is present: a manifest stored is not fetched again (a HEAD tells the tag's
 * digest), a blob stored in any repository is linked (mounted), not fetched.
 */
import type { Logger } from 'pino';
import { UpstreamError } from '../proxy/errors.js';
import { digestAlgorithm, type Digest } from '../registry/digest.js';
import { ManifestStore } from '../registry/manifest-store.js';
import { parseManifest, type BlobReference } from '../registry/manifests/index.js';
import { forEach } from '../registry/pool.js';
import { storedManifest, type ReplicationCore } from './core.js';
import type { Remote } from './remote.js';
import { COSIGN_SUFFIXES, isReferrerTag, referrerTag, RuleFilter, type ReplicationRule } from './rules.js';
import type { RuleFigures } from './stats.js';

/** blobs of one manifest copied at once (times the rule's concurrency in images) */
const BLOBS_AT_ONCE = 4;
/** 1 MiB storage writes for a blob read from a fast source (as the proxy's fetches) */
const WRITE_BATCH = 1 << 20;

export interface PullSummary {
  repositories: number;
  images: number;
  manifestsCopied: number;
  blobsCopied: number;
  blobsMounted: number;
  bytesCopied: number;
  referrers: number;
  tagsUpdated: number;
  /** images that could not be copied; the run goes on with the others */
  failed: number;
  /** the first few failures, for the log and the status */
  errors: string[];
  remoteRequests: number;
}

export class PullRun {
  private readonly filter: RuleFilter;
  /** stores an index whose children the rule's platforms leave out (no check that every child is there) */
  private readonly partial?: ManifestStore;
  /** blob fetches under way in this run: a second repository waiting for the same blob links it after */
  private readonly fetching = new Map<Digest, Promise<void>>();
  readonly summary: PullSummary = { repositories: 0, images: 0, manifestsCopied: 0, blobsCopied: 0, blobsMounted: 0, bytesCopied: 0, referrers: 0, tagsUpdated: 0, failed: 0, errors: [], remoteRequests: 0 };

  constructor(
    private readonly rule: ReplicationRule,
    private readonly remote: Remote,
    private readonly core: ReplicationCore,
    private readonly figures: RuleFigures,
    private readonly logger: Logger,
  ) {
    this.filter = new RuleFilter(rule);
    if (!this.filter.allPlatforms) this.partial = new ManifestStore(core.driver, core.blobs, core.tags, { cachedFromUpstream: true, index: core.index });
  }

  async run(signal?: AbortSignal): Promise<PullSummary> {
    const requestsBefore = this.remote.counts.requests;
    this.figures.imagesDone = 0;
    this.figures.imagesSelected = 0;
    const repositories = this.filter.literalRepositories ?? this.remote.catalog(signal);
    const selected: { name: string; tag: string; tags: Set<string> }[] = [];
    await forEach(repositories, this.rule.concurrency, async (name) => {
      if (!this.filter.repository(name)) return;
      const tags = new Set(await this.remote.tags(name, signal));
      if (tags.size === 0) return;
      this.summary.repositories++;
      // a referrer's tag is copied with its subject, not as an image of its own
      for (const tag of tags) if (!isReferrerTag(tag) && this.filter.tag(tag)) selected.push({ name, tag, tags });
    });
    this.figures.imagesSelected = selected.length;
    await forEach(selected, this.rule.concurrency, async ({ name, tag, tags }) => {
      signal?.throwIfAborted();
      try {
        await this.copyTag(name, tag, tags, signal);
        this.summary.images++;
      } catch (err) {
        if (signal?.aborted) throw err;
        this.summary.failed++;
        const message = `${name}:${tag}: ${(err as Error).message}`;
        if (this.summary.errors.length < 10) this.summary.errors.push(message);
        this.logger.warn({ err, repository: name, tag }, `replication ${this.rule.name}: could not copy ${name}:${tag}`);
      } finally {
        this.figures.imagesDone++;
      }
    });
    this.summary.remoteRequests = this.remote.counts.requests - requestsBefore;
    return this.summary;
  }

  /** the tag's image, its referrers, then the tag itself */
  private async copyTag(name: string, tag: string, tags: ReadonlySet<string>, signal?: AbortSignal): Promise<void> {
    const digest = await this.remote.manifestDigest(name, tag, signal);
    if (!digest) return; // deleted upstream since the listing
    await this.copyManifest(name, digest, signal);
    await this.copyReferrers(name, digest, tags, signal);
    await this.tagAs(name, tag, digest);
  }

  private async tagAs(name: string, tag: string, digest: Digest): Promise<void> {
    if ((await this.core.tags.resolve(name, tag)) === digest) return;
    await this.core.tags.tag(name, tag, digest);
    this.summary.tagsUpdated++;
  }

  /** the manifest with its children and blobs, unless the repository has it already */
  private async copyManifest(name: string, digest: Digest, signal?: AbortSignal): Promise<void> {
    if (await storedManifest(this.core.manifests, name, digest)) return;
    const fetched = await this.remote.manifest(name, digest, signal);
    if (!fetched) throw new UpstreamError(`the remote registry ${this.remote.host} has no manifest ${digest} in ${name}, which it named`);
    const manifest = await parseManifest(fetched.mediaType || undefined, fetched.body, { algorithm: digestAlgorithm(digest), signal });
    const children = manifest.manifests.filter((child) => this.filter.platform(child.platform));
    for (const child of children) await this.copyManifest(name, child.digest, signal);
    await forEach(manifest.blobs, BLOBS_AT_ONCE, (blob) => this.copyBlob(name, blob, signal));
    const store = children.length < manifest.manifests.length ? this.partial! : this.core.manifests;
    await store.put(name, { digest }, fetched.mediaType || undefined, fetched.body, signal);
    this.summary.manifestsCopied++;
    this.figures.manifestsCopied++;
  }

  /** the blob linked into `name`: already there, mounted from the store, or fetched */
  private async copyBlob(name: string, blob: BlobReference, signal?: AbortSignal): Promise<void> {
    const { blobs } = this.core;
    if ((await blobs.isLinked(name, blob.digest)) && (await blobs.storedSize(blob.digest)) !== undefined) return;
    const under = this.fetching.get(blob.digest);
    if (under) await under.catch(() => undefined);
    const size = await blobs.storedSize(blob.digest);
    if (size !== undefined) {
      await blobs.link(name, blob.digest, size);
      this.summary.blobsMounted++;
      this.figures.blobsMounted++;
      return;
    }
    const fetch = this.fetchBlob(name, blob, signal);
    this.fetching.set(blob.digest, fetch);
    try {
      await fetch;
    } finally {
      this.fetching.delete(blob.digest);
    }
  }

  /** the blob's bytes into an upload session of `name`, hashed as they arrive, stored only once they match */
  private async fetchBlob(name: string, blob: BlobReference, signal?: AbortSignal): Promise<void> {
    const res = await this.remote.blob(name, blob.digest, signal);
    const algorithm = digestAlgorithm(blob.digest);
    const upload = await this.core.uploads.start(name, algorithm);
    try {
      const stored = await this.core.uploads.complete(name, upload.uuid, [blob.digest], res.body, undefined, algorithm, undefined, WRITE_BATCH);
      this.summary.blobsCopied++;
      this.summary.bytesCopied += stored.size;
      this.figures.blobsCopied++;
      this.figures.bytesCopied += stored.size;
    } catch (err) {
      res.cancel();
      await this.core.uploads.cancel(name, upload.uuid).catch(() => undefined);
      throw err;
    }
  }

  /**
   * The subject's referrers: cosign's tags, then the OCI referrers API; on a remote without the
   * API, the tag schema's index (`sha256-<hex>`), copied as a tag with its children, the referrers.
   */
  private async copyReferrers(name: string, subject: Digest, tags: ReadonlySet<string>, signal?: AbortSignal): Promise<void> {
    for (const suffix of COSIGN_SUFFIXES) {
      const tag = referrerTag(subject, suffix);
      if (!tags.has(tag)) continue;
      const digest = await this.remote.manifestDigest(name, tag, signal);
      if (!digest) continue;
      await this.copyManifest(name, digest, signal);
      await this.tagAs(name, tag, digest);
      this.summary.referrers++;
    }
    const referrers = await this.remote.referrers(name, subject, signal);
    if (referrers) {
      for (const referrer of referrers) await this.copyManifest(name, referrer.digest, signal);
      this.summary.referrers += referrers.length;
      return;
    }
    const schemaTag = referrerTag(subject);
    if (!tags.has(schemaTag)) return;
    const index = await this.remote.manifestDigest(name, schemaTag, signal);
    if (!index) return;
    await this.copyManifest(name, index, signal);
    await this.tagAs(name, schemaTag, index);
    this.summary.referrers++;
  }
}
