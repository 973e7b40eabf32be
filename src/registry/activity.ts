/**
 * When a manifest revision was last pushed and last pulled: what the pull-through cache's expiry
 * and the retention policies decide by (docs/decisions.md, "Activity times").
 *
 * - Pushed: `pushed` in the revision's berth.json (written by every push or fetch into the cache),
 *   or the revision link's modification time, whichever is later (a revision written by
 *   Distribution has no berth.json; one Distribution deleted and pushed again has a stale one).
 * - Pulled: `berth.pulled` beside it, written by PullRecorder at most once per interval per
 *   revision, without making the pull wait for it.
 */
import type { Readable } from 'node:stream';
import { unlessMissing, type StorageDriver } from '../storage/driver.js';
import type { BlobStat, ByteRange, ContentSource } from './content.js';
import type { Digest } from './digest.js';
import type { ListingPage, PageBounds } from './indexing/listing-source.js';
import type { Reference, StoredManifest } from './manifest-store.js';
import type { Descriptor } from './manifests/index.js';
import * as layout from './layout.js';
import { readRevisionMeta } from './revision-meta.js';

export interface Activity {
  /** ms since the epoch; undefined when the revision is gone */
  pushed?: number;
  /** ms since the epoch; undefined when never recorded */
  pulled?: number;
}

/** the revision's push and last-pull times (storage reads: berth.json, the link's stat, berth.pulled) */
export async function readActivity(driver: StorageDriver, name: string, digest: Digest): Promise<Activity> {
  const [meta, link, pulled] = await Promise.all([
    readRevisionMeta(driver, name, digest).catch(() => undefined), // malformed: as if absent
    unlessMissing(driver.stat(layout.manifestRevisionLink(name, digest))),
    unlessMissing(driver.getContent(layout.manifestRevisionPulled(name, digest))),
  ]);
  const recorded = meta?.pushed === undefined ? NaN : Date.parse(meta.pushed);
  const linked = link?.modTime.getTime();
  const pushed = Number.isNaN(recorded) ? linked : linked === undefined ? recorded : Math.max(recorded, linked);
  const pulledAt = pulled === undefined ? NaN : Date.parse(pulled.toString());
  return { pushed, pulled: Number.isNaN(pulledAt) ? undefined : pulledAt };
}

/**
 * when `tag` was last pushed: the modification time of its `current` link, which every push by
 * tag writes (content written by Distribution has it too); undefined when it cannot be read
 */
export async function readTagPushed(driver: StorageDriver, name: string, tag: string): Promise<number | undefined> {
  return (await driver.stat(layout.tagCurrentLink(name, tag)).catch(() => undefined))?.modTime.getTime();
}

/** the later of the two times: when the revision was last used */
export function lastUsed(activity: Activity): number | undefined {
  const times = [activity.pushed, activity.pulled].filter((t): t is number => t !== undefined);
  return times.length === 0 ? undefined : Math.max(...times);
}

/** counts GETs of manifests for the metadata index (metadata/pulls.ts): synchronous, nothing awaited */
export interface PullSink {
  pulled(name: string, digest: string): void;
}

export interface PullRecorderOptions {
  /** a revision's pull is written at most once per this many ms (by this process) */
  interval: number;
  now: () => number;
  /** a failed write (it is retried by a later pull) */
  onError?: (err: unknown) => void;
}

/**
 * How often a revision's pull is written: a tenth of the shortest duration that is decided by it
 * (the TTL, a retention rule's notpulledfor), between 1 s and 1 h. A recorded time lags the last
 * pull by less than that, so content is never judged unused more than a tenth of its time early.
 */
export function recordInterval(durations: readonly number[]): number {
  const shortest = Math.min(...durations.filter((d) => d > 0), 10 * 3_600_000);
  return Math.max(1000, Math.floor(shortest / 10));
}

/** writes of berth.pulled in flight at most; pulls beyond it are recorded by a later pull */
const MAX_WRITES_IN_FLIGHT = 64;

/**
 * Records pulls. `pulled()` is synchronous and cheap: a map lookup, and at most once per interval
 * per revision a storage write that nobody awaits. The map holds the revisions written within the
 * last interval (older entries are dropped as new ones come), so it is bounded by the number of
 * distinct revisions pulled per interval.
 */
export class PullRecorder {
  /** `name@digest` -> when this process last wrote its berth.pulled; insertion order is time order */
  private readonly written = new Map<string, number>();
  private inFlight = 0;

  constructor(
    private readonly driver: StorageDriver,
    private readonly options: PullRecorderOptions,
  ) {}

  pulled(name: string, digest: Digest): void {
    const now = this.options.now();
    const key = `${name}@${digest}`;
    const last = this.written.get(key);
    if (last !== undefined && now - last < this.options.interval) return;
    this.forgetOlderThan(now - this.options.interval);
    if (this.inFlight >= MAX_WRITES_IN_FLIGHT) return;
    this.written.delete(key);
    this.written.set(key, now);
    this.inFlight++;
    this.driver
      .putContent(layout.manifestRevisionPulled(name, digest), Buffer.from(new Date(now).toISOString()))
      .catch((err: unknown) => {
        this.written.delete(key); // the next pull tries again
        this.options.onError?.(err);
      })
      .finally(() => this.inFlight--);
  }

  /** revisions in the map (for tests and memory figures) */
  get size(): number {
    return this.written.size;
  }

  private forgetOlderThan(limit: number): void {
    for (const [key, at] of this.written) {
      if (at > limit) return;
      this.written.delete(key);
    }
  }
}

/**
 * A content source that records every manifest it serves (GET or HEAD, by tag or digest, from
 * storage or through the cache) as pulled; everything else passes through.
 */
export class RecordingContent implements ContentSource {
  constructor(
    private readonly inner: ContentSource,
    private readonly recorder: PullRecorder,
  ) {}

  async manifest(name: string, reference: Reference): Promise<StoredManifest> {
    const manifest = await this.inner.manifest(name, reference);
    this.recorder.pulled(name, manifest.digest);
    return manifest;
  }

  statBlob(name: string, digest: Digest): Promise<BlobStat> {
    return this.inner.statBlob(name, digest);
  }

  openBlob(name: string, digest: Digest, range?: ByteRange): Promise<Readable> {
    return this.inner.openBlob(name, digest, range);
  }

  tags(name: string): Promise<readonly string[]> {
    return this.inner.tags(name);
  }

  referrers(name: string, subject: Digest, artifactType?: string): Promise<Descriptor[]> {
    return this.inner.referrers(name, subject, artifactType);
  }

  tagPage(name: string, page: PageBounds): Promise<ListingPage> {
    return this.inner.tagPage(name, page);
  }
}
