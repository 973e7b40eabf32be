/**
 * What an online pass asks of the store (issue 31: on S3 every call is a request): a missing use
 * record read with one call, and the walks of `repositories/` and `blobs/` keeping several
 * listings in flight, bounded, without losing or reordering a name.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { InMemoryDriver } from '../../src/storage/inmemory.js';
import { ForwardingDriver } from '../../src/storage/forwarding.js';
import type { StorageDriver } from '../../src/storage/driver.js';
import { AgingStore } from '../helpers/aging-store.js';
import type { FileInfo } from '../../src/storage/driver.js';
import * as layout from '../../src/registry/layout.js';
import type { Digest } from '../../src/registry/digest.js';
import { storedBlobs } from '../../src/registry/digest-dirs.js';
import { repositoryNames } from '../../src/registry/gc/repositories.js';
import { readTouch } from '../../src/registry/gc/touch.js';
import { collectOnline } from '../../src/registry/gc/online.js';

const digestOf = (text: string) => `sha256:${createHash('sha256').update(text).digest('hex')}` as Digest;

/** counts getContent and stat by path, and the listings in flight (each held a few ms) */
class WatchingDriver extends ForwardingDriver {
  reads = new Map<string, number>();
  stats = new Map<string, number>();
  listing = 0;
  maxListing = 0;
  constructor(inner: StorageDriver = new InMemoryDriver(), private readonly listMs = 0) {
    super(inner);
  }
  override getContent(path: string): Promise<Buffer> {
    this.reads.set(path, (this.reads.get(path) ?? 0) + 1);
    return super.getContent(path);
  }
  override stat(path: string): Promise<FileInfo> {
    this.stats.set(path, (this.stats.get(path) ?? 0) + 1);
    return super.stat(path);
  }
  override async listNames(path: string): Promise<string[]> {
    this.maxListing = Math.max(this.maxListing, ++this.listing);
    try {
      if (this.listMs > 0) await new Promise((resolve) => setTimeout(resolve, this.listMs));
      return await super.listNames(path);
    } finally {
      this.listing--;
    }
  }
}

const collect = async <T>(items: AsyncIterable<T>) => {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
};

describe('online collection: requests per blob and in flight', () => {
  it('reads a missing use record with one call, and a present one with its content and time', async () => {
    const driver = new WatchingDriver();
    const digest = digestOf('a');
    assert.equal(await readTouch(driver, digest), undefined);
    // on S3 a stat of a missing object is three requests (HEAD, the pending state's HEAD, a LIST)
    assert.deepEqual([driver.reads.get(layout.gcTouch(digest)), driver.stats.get(layout.gcTouch(digest))], [1, undefined]);
    await driver.putContent(layout.gcTouch(digest), Buffer.from('token-1'));
    const record = await readTouch(driver, digest);
    assert.equal(record?.token, 'token-1');
    assert.ok(record && Math.abs(record.modTime.getTime() - Date.now()) < 60_000);
  });

  it('a pass over unused blobs stats no absent use record', async () => {
    const store = new AgingStore(new InMemoryDriver());
    const driver = new WatchingDriver(store);
    const digests = Array.from({ length: 20 }, (_, i) => digestOf(`blob ${i}`));
    for (const digest of digests) await driver.putContent(layout.blobData(digest), Buffer.from('x'));
    store.age(60_000);
    const summary = await collectOnline(driver, { delayMs: 1000, dryRun: false });
    assert.equal(summary.blobsTrashed, 20);
    for (const digest of digests) {
      // read before the move and after it, never stat'ed (the record is absent)
      assert.equal(driver.reads.get(layout.gcTouch(digest)), 2, digest);
      assert.equal(driver.stats.get(layout.gcTouch(digest)), undefined, digest);
    }
  });

  it('walks repositories/ with several listings in flight, every name once, in order', async () => {
    const inner = new InMemoryDriver();
    const names: string[] = [];
    for (let n = 0; n < 5; n++) {
      for (let r = 0; r < 6; r++) names.push(`team-${n}/app-${r}`);
    }
    names.push('solo', 'team-2/app-3/nested');
    for (const name of names) await inner.putContent(layout.layerLink(name, digestOf(name)), Buffer.from(digestOf(name)));
    const driver = new WatchingDriver(inner, 5);
    const walked = await collect(repositoryNames(driver));
    assert.deepEqual(walked, [...names].sort());
    assert.ok(driver.maxListing > 2, `listings in flight: ${driver.maxListing}`);
    // 8 ahead per level, three levels deep at most here
    assert.ok(driver.maxListing <= 3 * 8, `listings in flight: ${driver.maxListing}`);
  });

  it('lists blobs/ ahead, bounded, and skips what is marked', async () => {
    const inner = new InMemoryDriver();
    const digests = Array.from({ length: 200 }, (_, i) => digestOf(`stored ${i}`));
    for (const digest of digests) await inner.putContent(layout.blobData(digest), Buffer.from('x'));
    const marked = new Set(digests.slice(0, 50));
    const driver = new WatchingDriver(inner, 5);
    const listed = await collect(storedBlobs(driver, (digest) => marked.has(digest), 6));
    assert.deepEqual([...listed].sort(), digests.slice(50).sort());
    assert.ok(driver.maxListing > 2 && driver.maxListing <= 6, `listings in flight: ${driver.maxListing}`);
  });
});
