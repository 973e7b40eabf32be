/**
 * What an online pass asks of an S3 store per collected blob (issue 31; docs/performance.md,
 * "Online garbage collection at scale on S3"), on Ceph: the blobs' data and the trash known from
 * listings (no stat of each), no `trashed` marker written where the move's copy carries its own
 * time, and the trash emptied with DeleteObjects rather than a directory delete per entry. The
 * trash's time rule holds with the marker gone: an entry moved within the delay stays.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { after, describe, it } from 'node:test';
import { validateConfig } from '../../src/config/load.js';
import type { FileInfo, StorageDriver } from '../../src/storage/driver.js';
import { ForwardingDriver } from '../../src/storage/forwarding.js';
import { S3Driver } from '../../src/storage/s3/driver.js';
import * as layout from '../../src/registry/layout.js';
import type { Digest } from '../../src/registry/digest.js';
import { collectOnline } from '../../src/registry/gc/online.js';
import { AgingStore } from '../helpers/aging-store.js';
import { CEPH_TOOLS, sharedCeph, stopSharedCeph } from '../helpers/ceph.js';
import { needTools } from '../helpers/tools.js';

const DELAY_MS = 2000;
/** older than the delay on S3's whole-second clock */
const AGED_MS = 3200;
const digestOf = (text: string) => `sha256:${createHash('sha256').update(text).digest('hex')}` as Digest;

/** the collector's calls, by operation and what the path is */
class CallCounter extends ForwardingDriver {
  readonly calls = new Map<string, number>();
  private count(operation: string, path: string): void {
    const what = path.includes('/_berth/gc/touched/') ? 'touched' : path.includes('/_berth/gc/trash/') ? (path.endsWith('/trashed') ? 'trash-marker' : path.endsWith('/data') ? 'trash-data' : 'trash') : path.includes('/blobs/') ? 'blob' : 'other';
    const key = `${operation} ${what}`;
    this.calls.set(key, (this.calls.get(key) ?? 0) + 1);
  }
  of(key: string): number {
    return this.calls.get(key) ?? 0;
  }
  override stat(path: string): Promise<FileInfo> {
    this.count('stat', path);
    return super.stat(path);
  }
  override putContent(path: string, data: Buffer): Promise<void> {
    this.count('put', path);
    return super.putContent(path, data);
  }
  override delete(path: string): Promise<void> {
    this.count('delete', path);
    return super.delete(path);
  }
  override get deleteFiles(): StorageDriver['deleteFiles'] {
    const inner = super.deleteFiles;
    return (
      inner &&
      ((paths) => {
        this.count('deleteFiles', '');
        return inner(paths);
      })
    );
  }
}

describe('online collection on S3: requests per collected blob', needTools(CEPH_TOOLS, 'the online collection S3 test'), () => {
  after(() => stopSharedCeph());

  it('trashes without a stat or marker per blob and empties the trash with one DeleteObjects, an entry moved within the delay staying', async () => {
    const { ceph, bucket } = await sharedCeph();
    const config = validateConfig({ version: '0.1', storage: { s3: ceph.params(bucket, { rootdirectory: `/online-requests-${randomBytes(4).toString('hex')}` }) } }, 'test');
    const s3 = new S3Driver(config.storage.s3!);
    try {
      const store = new AgingStore(s3);
      const digests = Array.from({ length: 12 }, (_, i) => digestOf(`garbage ${i}`));
      for (const digest of digests) await store.putContent(layout.blobData(digest), Buffer.from(digest));
      // half of them used once, long ago
      for (const digest of digests.slice(0, 6)) await store.putContent(layout.gcTouch(digest), Buffer.from(randomBytes(8).toString('hex')));
      store.age(AGED_MS);

      const first = new CallCounter(store);
      const trashed = await collectOnline(first, { delayMs: DELAY_MS, dryRun: false });
      assert.equal(trashed.blobsTrashed, digests.length);
      // the listing of blobs/ told each blob's data; the moved copy carries the time it went to the trash
      assert.equal(first.of('stat blob'), 0, JSON.stringify([...first.calls]));
      assert.equal(first.of('put trash-marker'), 0, JSON.stringify([...first.calls]));

      // at once: every entry went to the trash within the delay, and stays there
      const soon = await collectOnline(new CallCounter(store), { delayMs: DELAY_MS, dryRun: false });
      assert.equal(soon.blobsPurged, 0);
      for (const digest of digests) assert.ok(await s3.stat(layout.gcTrashData(digest)), digest);

      store.age(AGED_MS);
      const second = new CallCounter(store);
      const purged = await collectOnline(second, { delayMs: DELAY_MS, dryRun: false });
      assert.equal(purged.blobsPurged, digests.length);
      assert.equal(second.of('stat trash-data') + second.of('stat trash-marker'), 0, JSON.stringify([...second.calls]));
      assert.equal(second.of('delete trash'), 0, JSON.stringify([...second.calls]));
      assert.equal(second.of('deleteFiles other'), 1, JSON.stringify([...second.calls]));
      assert.deepEqual(await s3.listFiles(layout.GC_TRASH), []);
      for (const digest of digests) await assert.rejects(s3.stat(layout.blobData(digest)), digest);
    } finally {
      await s3.close();
    }
  });

  it('a trash entry with a marker of an earlier berth is timed by the marker', async () => {
    const { ceph, bucket } = await sharedCeph();
    const config = validateConfig({ version: '0.1', storage: { s3: ceph.params(bucket, { rootdirectory: `/online-marker-${randomBytes(4).toString('hex')}` }) } }, 'test');
    const s3 = new S3Driver(config.storage.s3!);
    try {
      const store = new AgingStore(s3);
      const digest = digestOf('trashed by an earlier berth');
      await store.putContent(layout.gcTrashData(digest), Buffer.from('x'));
      store.age(AGED_MS);
      // the marker is younger than the delay: the entry stays though its data is old
      await store.putContent(`${layout.gcTrashDir(digest)}/trashed`, Buffer.alloc(0));
      assert.equal((await collectOnline(store, { delayMs: DELAY_MS, dryRun: false })).blobsPurged, 0);
      store.age(AGED_MS);
      assert.equal((await collectOnline(store, { delayMs: DELAY_MS, dryRun: false })).blobsPurged, 1);
      assert.deepEqual(await s3.listFiles(layout.GC_TRASH), []);
    } finally {
      await s3.close();
    }
  });
});
