/**
 * Content read during one walk over storage (the index rebuild), kept by digest: content under a
 * digest never changes, and the same manifest, configuration and layers turn up in many
 * repositories (an image pushed to several, a base layer under thousands), so each is read once.
 * Bounded: the oldest entries go when a bound is reached.
 */
import type { Digest } from '../digest.js';

/** bytes of content kept (configurations are up to describe.ts's CONFIG_LIMIT, manifests a few KiB) */
const CONTENT_BYTES = 64 * 1024 * 1024;
/** blob sizes kept */
const SIZES = 200_000;

export class ContentCache {
  private readonly content = new Map<string, Promise<Buffer | undefined>>();
  private readonly lengths = new Map<string, number>();
  private bytes = 0;
  private readonly sizes = new Map<string, Promise<number | undefined>>();

  /** the content under `digest` (a manifest, a configuration), read by `read` the first time */
  read(digest: Digest, read: () => Promise<Buffer | undefined>): Promise<Buffer | undefined> {
    const known = this.content.get(digest);
    if (known) return known;
    const reading = read();
    this.content.set(digest, reading);
    // missing content (written meanwhile, perhaps) and failed reads are not kept
    reading.then(
      (data) => (data ? this.account(digest, data.length) : this.content.delete(digest)),
      () => this.content.delete(digest),
    );
    return reading;
  }

  /** the size of the blob `digest`, found by `stat` the first time */
  size(digest: Digest, stat: () => Promise<number | undefined>): Promise<number | undefined> {
    const known = this.sizes.get(digest);
    if (known) return known;
    const finding = stat();
    this.sizes.set(digest, finding);
    finding.then(
      (size) => size === undefined && this.sizes.delete(digest),
      () => this.sizes.delete(digest),
    );
    if (this.sizes.size > SIZES) this.sizes.delete(this.sizes.keys().next().value!);
    return finding;
  }

  private account(digest: string, length: number): void {
    if (!this.content.has(digest)) return;
    this.lengths.set(digest, length);
    this.bytes += length;
    for (const [oldest, n] of this.lengths) {
      if (this.bytes <= CONTENT_BYTES) break;
      this.lengths.delete(oldest);
      this.content.delete(oldest);
      this.bytes -= n;
    }
  }
}
