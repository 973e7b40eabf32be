/** UploadSessions on the in-memory driver: resume, completion digests, ranges, expiry. */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { beforeEach, describe, it } from 'node:test';
import { BlobStore } from '../../src/registry/blobs.js';
import type { Digest } from '../../src/registry/digest.js';
import { RegistryError } from '../../src/registry/errors.js';
import * as layout from '../../src/registry/layout.js';
import { UploadRangeError, UploadSessions } from '../../src/registry/uploads.js';
import { InMemoryDriver } from '../../src/storage/inmemory.js';
import { ManualClock } from '../helpers/manual-clock.js';

const digest = (algorithm: string, data: Buffer) => `${algorithm}:${createHash(algorithm).update(data).digest('hex')}`;
const sha256 = (data: Buffer) => digest('sha256', data) as Digest;

async function rejectsWith(work: Promise<unknown>, code: string): Promise<RegistryError> {
  let caught: unknown;
  await work.catch((err: unknown) => (caught = err));
  assert.ok(caught instanceof RegistryError, `a RegistryError ${code}, got ${String(caught)}`);
  assert.equal(caught.code, code);
  return caught;
}

describe('UploadSessions (in-memory driver)', () => {
  let driver: InMemoryDriver;
  let blobs: BlobStore;
  let uploads: UploadSessions;
  const name = 'lib/app';
  const data = Buffer.from('0123456789abcdefghij'.repeat(100));

  beforeEach(() => {
    driver = new InMemoryDriver();
    blobs = new BlobStore(driver);
    uploads = new UploadSessions(driver, blobs);
  });

  it('a chunked upload completes into a blob linked in the repository; the session is gone', async () => {
    const { uuid } = await uploads.start(name);
    assert.equal((await uploads.append(name, uuid, [data.subarray(0, 700)])).size, 700);
    assert.equal((await uploads.status(name, uuid)).size, 700);
    const blob = await uploads.complete(name, uuid, [sha256(data)], (async function* () { yield data.subarray(700); })());
    assert.deepEqual(blob, { digest: sha256(data), size: data.length });
    assert.deepEqual(await blobs.stat(name, blob.digest), blob);
    assert.deepEqual(await driver.getContent(layout.blobData(blob.digest)), data);
    await rejectsWith(uploads.status(name, uuid), 'BLOB_UPLOAD_UNKNOWN');
    await assert.rejects(driver.stat(layout.uploadDir(name, uuid)));
  });

  it('hashed on the hashing thread (a body of several batches): the digest decides, a wrong one stores nothing', async () => {
    const big = Buffer.alloc(3 * 1024 * 1024 + 4321, 7);
    big.write('the hashing thread', 100_000);
    const pieces = function* () {
      for (let at = 0; at < big.length; at += 65536) yield big.subarray(at, at + 65536);
    };
    for (const algorithm of ['sha256', 'sha512'] as const) {
      const { uuid } = await uploads.start(name, algorithm);
      const blob = await uploads.complete(name, uuid, [digest(algorithm, big)], (async function* () { yield* pieces(); })(), undefined, algorithm, undefined, 1024 * 1024, { hashOffThread: true });
      assert.deepEqual(blob, { digest: digest(algorithm, big), size: big.length });
      assert.deepEqual(await driver.getContent(layout.blobData(blob.digest)), big);
    }
    const wrong = sha256(Buffer.from('other bytes'));
    const { uuid } = await uploads.start(name);
    await rejectsWith(uploads.complete(name, uuid, [wrong], (async function* () { yield* pieces(); })(), undefined, 'sha256', undefined, 1024 * 1024, { hashOffThread: true }), 'DIGEST_INVALID');
    await assert.rejects(driver.stat(layout.blobData(wrong)));
    await assert.rejects(driver.stat(layout.uploadDir(name, uuid)));
  });

  it('resumes on another instance (no hash state in memory): the digest covers every byte', async () => {
    const first = uploads;
    const second = new UploadSessions(driver, blobs);
    const { uuid } = await first.start(name);
    await first.append(name, uuid, [data.subarray(0, 500)], { start: 0, end: 499 });
    // the second instance has never seen the upload: it rehashes the 500 stored bytes
    assert.equal((await second.append(name, uuid, [data.subarray(500, 1200)], { start: 500, end: 1199 })).size, 1200);
    // and back on the first, whose hash state (at 500 bytes) is stale
    await first.append(name, uuid, [data.subarray(1200)], { start: 1200, end: data.length - 1 });
    const blob = await second.complete(name, uuid, [sha256(data)]);
    assert.equal(blob.digest, sha256(data));
    assert.deepEqual(await driver.getContent(layout.blobData(blob.digest)), data);
  });

  it('completes with sha384 and sha512 digests too: all given digests are checked, the blob is stored under the first', async () => {
    for (const algorithms of [['sha384'], ['sha512'], ['sha256', 'sha384', 'sha512'], ['sha512', 'sha256']]) {
      const { uuid } = await uploads.start(name);
      await uploads.append(name, uuid, [data]);
      const blob = await uploads.complete(name, uuid, algorithms.map((a) => digest(a, data)));
      const stored = digest(algorithms[0], data) as Digest;
      assert.deepEqual(blob, { digest: stored, size: data.length }, algorithms.join());
      assert.deepEqual(await driver.getContent(layout.blobData(stored)), data);
      assert.deepEqual(await blobs.stat(name, stored), blob);
    }
  });

  it('an upload started with sha512 hashes with it across chunks and instances, and can still be completed by sha256', async () => {
    const second = new UploadSessions(driver, blobs);
    const { uuid, algorithm } = await uploads.start(name, 'sha512');
    assert.equal(algorithm, 'sha512');
    await uploads.append(name, uuid, [data.subarray(0, 300)], undefined, 'sha512');
    // another instance rehashes the stored bytes with the upload's algorithm
    await second.append(name, uuid, [data.subarray(300, 900)], { start: 300, end: 899 }, 'sha512');
    const blob = await uploads.complete(name, uuid, [digest('sha512', data)], (async function* () { yield data.subarray(900); })(), undefined, 'sha512');
    assert.deepEqual(blob, { digest: digest('sha512', data), size: data.length });
    // a sha256 completion of a sha512 upload: checked by reading the stored bytes, stored as sha256
    const other = await uploads.start(name, 'sha512');
    await uploads.append(name, other.uuid, [data], undefined, 'sha512');
    assert.deepEqual(await uploads.complete(name, other.uuid, [sha256(data)], undefined, undefined, 'sha512'), { digest: sha256(data), size: data.length });
    // the same content, stored once per algorithm
    assert.deepEqual(await driver.getContent(layout.blobData(sha256(data))), data);
    // in Distribution's layout: blobs/sha512/<first 2 hex>/<hex>/data
    const hex = digest('sha512', data).slice('sha512:'.length);
    assert.deepEqual(await driver.getContent(`/docker/registry/v2/blobs/sha512/${hex.slice(0, 2)}/${hex}/data`), data);
  });

  it('a wrong sha512 digest on a sha512 upload: DIGEST_INVALID, nothing stored', async () => {
    const { uuid } = await uploads.start(name, 'sha512');
    await uploads.append(name, uuid, [data], undefined, 'sha512');
    const wrong = digest('sha512', Buffer.from('other')) as Digest;
    await rejectsWith(uploads.complete(name, uuid, [wrong], undefined, undefined, 'sha512'), 'DIGEST_INVALID');
    assert.equal(await blobs.isLinked(name, wrong), false);
    assert.equal(await blobs.storedSize(digest('sha512', data) as Digest), undefined);
  });

  it('a digest that does not match: 400 DIGEST_INVALID naming it, the upload discarded, no blob', async () => {
    const { uuid } = await uploads.start(name);
    await uploads.append(name, uuid, [data]);
    const wrong = digest('sha512', Buffer.from('other'));
    const err = await rejectsWith(uploads.complete(name, uuid, [sha256(data), wrong]), 'DIGEST_INVALID');
    assert.deepEqual(err.detail, { digest: wrong });
    await rejectsWith(uploads.status(name, uuid), 'BLOB_UPLOAD_UNKNOWN');
    assert.equal(await blobs.isLinked(name, sha256(data)), false);
  });

  it('an empty upload completes into the empty blob', async () => {
    const { uuid } = await uploads.start(name);
    const empty = Buffer.alloc(0);
    const blob = await uploads.complete(name, uuid, [sha256(empty), digest('sha512', empty)]);
    assert.deepEqual(blob, { digest: sha256(empty), size: 0 });
    const { uuid: second } = await uploads.start(name, 'sha512');
    assert.deepEqual(await uploads.complete(name, second, [digest('sha512', empty)], undefined, undefined, 'sha512'), { digest: digest('sha512', empty), size: 0 });
  });

  it('a chunk that does not start where the upload ends: UploadRangeError with the stored size, nothing written', async () => {
    const { uuid } = await uploads.start(name);
    await uploads.append(name, uuid, [data.subarray(0, 10)]);
    await assert.rejects(uploads.append(name, uuid, [data.subarray(20, 30)], { start: 20, end: 29 }), (err: unknown) => {
      assert.ok(err instanceof UploadRangeError);
      assert.equal(err.code, 'RANGE_INVALID');
      assert.equal(err.size, 10);
      return true;
    });
    assert.equal((await uploads.status(name, uuid)).size, 10);
  });

  it('cancel removes the upload; an unknown one is 404 BLOB_UPLOAD_UNKNOWN', async () => {
    const { uuid } = await uploads.start(name);
    await uploads.append(name, uuid, [data]);
    await uploads.cancel(name, uuid);
    await rejectsWith(uploads.status(name, uuid), 'BLOB_UPLOAD_UNKNOWN');
    await rejectsWith(uploads.cancel(name, uuid), 'BLOB_UPLOAD_UNKNOWN');
    await rejectsWith(uploads.append(name, 'no-such-upload', [data]), 'BLOB_UPLOAD_UNKNOWN');
  });

  describe('expiry (maxAge, on the given clock)', () => {
    const maxAge = 60_000;
    let clock: ManualClock;
    let expiring: UploadSessions;

    beforeEach(() => {
      clock = new ManualClock();
      expiring = new UploadSessions(driver, blobs, { maxAge, clock });
    });

    it('starts at the clock\'s now; up to maxAge the upload lives, past it it is gone and removed', async () => {
      const upload = await expiring.start(name);
      assert.equal(upload.startedAt.getTime(), clock.now());
      await clock.advance(maxAge);
      assert.equal((await expiring.append(name, upload.uuid, [data])).size, data.length);
      await clock.advance(1);
      await rejectsWith(expiring.status(name, upload.uuid), 'BLOB_UPLOAD_UNKNOWN');
      await assert.rejects(driver.stat(layout.uploadDir(name, upload.uuid)), 'the expired upload is removed');
    });

    it('every operation on an expired upload is 404 BLOB_UPLOAD_UNKNOWN', async () => {
      for (const operation of [
        (uuid: string) => expiring.append(name, uuid, [data]),
        (uuid: string) => expiring.complete(name, uuid, [sha256(data)], (async function* () { yield data; })()),
        (uuid: string) => expiring.cancel(name, uuid),
      ]) {
        const { uuid } = await expiring.start(name);
        await clock.advance(maxAge + 1);
        await rejectsWith(operation(uuid), 'BLOB_UPLOAD_UNKNOWN');
        await assert.rejects(driver.stat(layout.uploadDir(name, uuid)));
      }
      assert.equal(await blobs.isLinked(name, sha256(data)), false);
    });

    it('without maxAge uploads never expire', async () => {
      const keeping = new UploadSessions(driver, blobs, { clock });
      const { uuid } = await keeping.start(name);
      await clock.advance(365 * 24 * 3600_000);
      assert.equal((await keeping.status(name, uuid)).size, 0);
    });
  });
});
