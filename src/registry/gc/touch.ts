/**
 * The running registry's half of online collection's protocol (docs/decisions.md, "Garbage
 * collection (online)"): before a blob is told to exist or accepted as a reference, its use is
 * recorded (`touch`), and only then is its content checked; content a collection has just moved
 * to its trash is taken back (`rescue`). The collector's half (online.ts) moves a blob to the
 * trash, then reads the record again: one of the two always sees the other.
 */
import { randomUUID } from 'node:crypto';
import { PathNotFoundError, unlessMissing, type StorageDriver } from '../../storage/driver.js';
import type { BlobGuard } from '../blobs.js';
import type { Digest } from '../digest.js';
import * as layout from '../layout.js';
import { waitForDeleters } from './deleting.js';
import { forEach, REQUEST_IO_CONCURRENCY } from '../pool.js';

export interface TouchRecord {
  /** unique per write, so two writes within the store's timestamp resolution still differ */
  token: string;
  modTime: Date;
}

/**
 * a blob's last recorded use, or undefined. The content first, and its time only when there is a
 * record: most blobs a collection looks at have none, and on S3 a read of a missing object is one
 * request where a `stat` of one costs three (it checks for a pending upload and a directory). A
 * record rewritten between the two reads pairs the older token with the newer time: the newer time
 * only spares more, and the rewrite came after the read of the token, so the request that made it
 * checks the content after that and sees what the collector did (online.ts).
 */
export async function readTouch(driver: StorageDriver, digest: Digest): Promise<TouchRecord | undefined> {
  const content = await unlessMissing(driver.getContent(layout.gcTouch(digest)));
  if (!content) return undefined;
  const info = await unlessMissing(driver.stat(layout.gcTouch(digest)));
  return info ? { token: content.toString(), modTime: info.modTime } : undefined;
}

export class TouchingGuard implements BlobGuard {
  /** digest -> when this process last wrote its record (local clock) */
  private readonly written = new Map<string, number>();

  /**
   * `quietMs`: a blob this process recorded less than this long ago is not written again (a hot
   * blob pulled often costs one write per quietMs). It must stay well under the collection delay:
   * the record a collection reads is then recent enough to spare the blob (online.ts).
   */
  constructor(
    private readonly driver: StorageDriver,
    private readonly quietMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  async touch(digests: Iterable<string>): Promise<void> {
    const now = this.now();
    const due = [...new Set(digests)].filter((digest) => now - (this.written.get(digest) ?? -Infinity) >= this.quietMs);
    await forEach(due, REQUEST_IO_CONCURRENCY, async (digest) => {
      await this.driver.putContent(layout.gcTouch(digest as Digest), Buffer.from(randomUUID()));
      this.written.set(digest, now);
    });
    if (this.written.size > 100_000) this.forgetOld(now);
  }

  async rescue(digest: Digest): Promise<boolean> {
    try {
      await this.driver.move(layout.gcTrashData(digest), layout.blobData(digest));
      return true;
    } catch (err) {
      if (err instanceof PathNotFoundError) return false;
      throw err;
    }
  }

  settle(name: string): Promise<void> {
    return waitForDeleters(this.driver, name);
  }

  private forgetOld(now: number): void {
    for (const [digest, at] of this.written) if (now - at >= this.quietMs) this.written.delete(digest);
  }
}
