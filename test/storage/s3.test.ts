/**
 * The S3 driver against a real Ceph radosgw: the shared driver suite, then what only S3 has
 * (multipart resume across driver instances, large copies, pre-signed URLs, start-up checks).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { ListMultipartUploadsCommand, ListObjectsV2Command, ListPartsCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { validateConfig } from '../../src/config/load.js';
import { PathNotFoundError, WriteConflictError, WriteRefusedError } from '../../src/storage/driver.js';
import { S3Driver, type S3DriverOptions } from '../../src/storage/s3/driver.js';
import { CEPH_TOOLS, startCeph, type CephS3 } from '../helpers/ceph.js';
import { needTools } from '../helpers/tools.js';
import { runDriverSuite } from './driver-suite.js';

const MiB = 1024 * 1024;
const run = promisify(execFile);

/** storage.s3 as the config schema makes it (all defaults applied) */
export function s3Options(ceph: CephS3, bucket: string, extra: Record<string, unknown> = {}): S3DriverOptions {
  const config = validateConfig({ version: '0.1', storage: { s3: ceph.params(bucket, extra) } }, 'test');
  return { ...config.storage.s3!, redirectExpiryMs: config.storage.redirect.expiry };
}

/** removes everything below the driver's root */
async function wipe(driver: S3Driver): Promise<void> {
  for (const child of await driver.list('/')) await driver.delete(child);
}

describe('s3 driver on Ceph radosgw', needTools(CEPH_TOOLS, 'the S3 driver tests'), () => {
  let ceph: CephS3;
  let bucket: string;
  before(async () => {
    ceph = await startCeph();
    bucket = await ceph.createBucket();
  });
  after(() => ceph?.stop());

  runDriverSuite('s3', async () => {
    const driver = new S3Driver(s3Options(ceph, bucket, { rootdirectory: `/suite-${randomBytes(4).toString('hex')}` }));
    return {
      driver,
      cleanup: async () => {
        const cleaner = new S3Driver(driver.options);
        await wipe(cleaner);
        await cleaner.close();
      },
    };
  }, { childrenVersion: 'never' });
});

/** the open multipart uploads at or below `path`, with their parts' sizes */
async function uploadsOf(driver: S3Driver, path: string): Promise<{ key: string; parts: number[] }[]> {
  const out = await driver.client.send(new ListMultipartUploadsCommand({ Bucket: driver.options.bucket, Prefix: driver.key(path) }));
  const uploads = [];
  for (const u of out.Uploads ?? []) {
    const parts = await driver.client.send(new ListPartsCommand({ Bucket: driver.options.bucket, Key: u.Key, UploadId: u.UploadId }));
    uploads.push({ key: u.Key!, parts: (parts.Parts ?? []).map((p) => p.Size!) });
  }
  return uploads;
}

async function readAll(stream: NodeJS.ReadableStream): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

describe('s3 driver: what only S3 has (Ceph radosgw)', needTools(CEPH_TOOLS, 'the S3 driver tests'), () => {
  let ceph: CephS3;
  let bucket: string;
  const drivers: S3Driver[] = [];
  const make = (extra: Record<string, unknown> = {}) => {
    const driver = new S3Driver(s3Options(ceph, bucket, { rootdirectory: `/only-${randomBytes(4).toString('hex')}`, ...extra }));
    drivers.push(driver);
    return driver;
  };
  /** a second driver instance on the same root (another berth process, as far as state goes) */
  const twin = (driver: S3Driver) => {
    const other = new S3Driver(driver.options);
    drivers.push(other);
    return other;
  };
  before(async () => {
    ceph = await startCeph();
    bucket = await ceph.createBucket();
  });
  after(async () => {
    for (const d of drivers) await d.close();
    await ceph?.stop();
  });

  it('readSmallFiles reads many objects in order with their times (one GET each); missing ones and directories are undefined', async () => {
    const driver = make();
    await driver.putContent('/a/link', Buffer.from('sha256:abc'));
    await driver.putContent('/a/empty', Buffer.alloc(0));
    const paths = ['/a/link', '/a/missing', '/a', '/a/empty', ...Array.from({ length: 40 }, () => '/a/link')];
    const files = await driver.readSmallFiles(paths);
    assert.deepEqual(
      files.map((f) => f?.content.toString()),
      ['sha256:abc', undefined, undefined, '', ...Array.from({ length: 40 }, () => 'sha256:abc')],
    );
    assert.equal(files[0]?.modTimeMs, (await driver.stat('/a/link')).modTime.getTime());
    assert.deepEqual(await driver.readSmallFiles([]), []);
  });

  it('resumes a multipart write from another driver instance, with parts of chunksize and a small last part', async () => {
    const first = make({ chunksize: 6 * MiB });
    const a = randomBytes(13 * MiB);
    const b = randomBytes(7 * MiB + 5);
    const c = randomBytes(100);
    const w1 = await first.writer('/up/data', false);
    await w1.write(a);
    await w1.close();
    assert.equal((await first.stat('/up/data')).size, a.length);

    const second = twin(first);
    const w2 = await second.writer('/up/data', true);
    assert.equal(w2.size, a.length);
    await w2.write(b);
    await w2.close();
    // between writers the upload stays open: its size is known everywhere, its bytes are not readable yet
    assert.equal((await twin(first).stat('/up/data')).size, a.length + b.length);
    await assert.rejects(twin(first).reader('/up/data'), PathNotFoundError);
    // one upload, kept open: 13 MiB went out as two parts of 6 MiB, the last MiB (below the
    // minimum part size) waited in the pending state; with 7 MiB + 5 more that makes a third part,
    // and 2 MiB + 5 bytes wait
    assert.deepEqual(await uploadsOf(first, '/up/data'), [{ key: first.key('/up/data'), parts: [6 * MiB, 6 * MiB, 6 * MiB] }]);

    const w3 = await twin(first).writer('/up/data', true);
    assert.equal(w3.size, a.length + b.length);
    await w3.write(c);
    await w3.commit();
    assert.ok((await first.getContent('/up/data')).equals(Buffer.concat([a, b, c])));
    assert.ok((await readAll(await first.reader('/up/data', a.length + 3))).equals(Buffer.concat([a, b, c]).subarray(a.length + 3)));
  });

  it('appends to a small file (below the 5 MiB minimum part) across instances', async () => {
    const first = make();
    const w1 = await first.writer('/small/data', true);
    await w1.write(Buffer.from('abc'));
    await w1.close();
    const w2 = await twin(first).writer('/small/data', true);
    await w2.write(randomBytes(11 * MiB)); // grows past chunksize: the small start goes out in the first part
    await w2.commit();
    const content = await first.getContent('/small/data');
    assert.equal(content.length, 3 + 11 * MiB);
    assert.equal(content.subarray(0, 3).toString(), 'abc');
  });

  it('of two writers of one file on two instances, the one that claimed later is kept; the other fails with WriteConflictError and never corrupts the file', async () => {
    const first = make({ chunksize: 6 * MiB });
    const base = randomBytes(7 * MiB); // one part of 6 MiB and a tail of 1 MiB
    const w0 = await first.writer('/race/data', false);
    await w0.write(base);
    await w0.close();
    // two parts each: write() returns once the first part (and so its claim) is done
    const [x, y, z] = [randomBytes(12 * MiB + 11), randomBytes(12 * MiB + 22), randomBytes(12 * MiB + 33)];

    // both open from the same state; the first to send a part claims, the other's claim fails
    const a = await twin(first).writer('/race/data', true);
    const b = await twin(first).writer('/race/data', true);
    await a.write(x);
    await assert.rejects(
      (async () => {
        await b.write(y);
        await b.close();
      })(),
      (err: Error) => err instanceof WriteConflictError && /another request changed this unfinished file/.test(err.message),
    );
    await a.close();
    assert.equal((await first.stat('/race/data')).size, base.length + x.length);
    const done = await twin(first).writer('/race/data', true);
    await done.commit();
    assert.ok((await first.getContent('/race/data')).equals(Buffer.concat([base, x])));
    const w1 = await first.writer('/race/data', false);
    await w1.write(Buffer.concat([base, x]));
    await w1.close();

    // c opens after d has claimed (and sent a part): c's part numbers lie after d's, c claims
    // later, so d's close fails and c's bytes follow the state d opened from
    const d = await twin(first).writer('/race/data', true);
    await d.write(y);
    const c = await twin(first).writer('/race/data', true);
    await c.write(z);
    await assert.rejects(d.close(), WriteConflictError);
    await c.close();
    assert.equal((await first.stat('/race/data')).size, base.length + x.length + z.length);

    // d's two parts lie between the file's parts: S3 completes without them, Ceph radosgw refuses
    // to (InvalidPart), and the upload ends with a clear error, never with other bytes
    const end = await twin(first).writer('/race/data', true);
    const completed = await end.commit().then(
      () => true,
      (err: Error) => {
        assert.ok(err instanceof WriteRefusedError && /around 2 part\(s\) a concurrent request .* sent and lost/.test(err.message), err.message);
        return false;
      },
    );
    if (completed) assert.ok((await first.getContent('/race/data')).equals(Buffer.concat([base, x, z])));
    else await assert.rejects(first.reader('/race/data'), PathNotFoundError);
  });

  it('continues a pending state in the format written before part lists (a count, no nonce)', async () => {
    const driver = make();
    await driver.client.send(
      new PutObjectCommand({ Bucket: bucket, Key: `${driver.key('/old/data')}~pending`, Body: 'abc', Metadata: { 'berth-upload-id': '', 'berth-parts': '0', 'berth-size': '3' } }),
    );
    assert.equal((await driver.stat('/old/data')).size, 3);
    const w = await twin(driver).writer('/old/data', true);
    assert.equal(w.size, 3);
    await w.write(Buffer.from('def'));
    await w.commit();
    assert.equal((await driver.getContent('/old/data')).toString(), 'abcdef');
  });

  it("refuses a write past S3's part limit with a clear error, and keeps what earlier writers stored", async () => {
    // the limit lowered to 2 (S3's is 10,000): three requests of one 6 MiB part each
    const first = make({ chunksize: 6 * MiB });
    const limited = () => {
      const driver = new S3Driver({ ...first.options, maxParts: 2 });
      drivers.push(driver);
      return driver;
    };
    const parts = [randomBytes(6 * MiB), randomBytes(6 * MiB)];
    for (const part of parts) {
      const w = await limited().writer('/limit/data', true);
      await w.write(part);
      await w.close();
    }
    const w3 = await limited().writer('/limit/data', true);
    await assert.rejects(
      (async () => {
        await w3.write(randomBytes(6 * MiB));
        await w3.close();
      })(),
      (err: Error) => err instanceof WriteRefusedError && /more than 2 parts, S3's limit for one object/.test(err.message) && /send larger chunks/.test(err.message),
    );
    // the refused request left nothing: the file is what the first two wrote, and completes
    assert.equal((await first.stat('/limit/data')).size, 12 * MiB);
    const done = await limited().writer('/limit/data', true);
    await done.commit();
    assert.ok((await first.getContent('/limit/data')).equals(Buffer.concat(parts)));
    assert.deepEqual(await uploadsOf(first, '/limit'), []);
  });

  it('cancel aborts the multipart upload and leaves nothing', async () => {
    const driver = make({ chunksize: 6 * MiB });
    const w = await driver.writer('/cancel/data', false);
    await w.write(randomBytes(7 * MiB)); // one part uploaded
    await w.cancel();
    await assert.rejects(driver.stat('/cancel/data'));
    assert.deepEqual(await uploadsOf(driver, '/cancel'), []);
  });

  it('sends a tail of at least 5 MiB as a part at close, and hides the pending state from listings', async () => {
    const driver = make({ chunksize: 8 * MiB });
    const a = randomBytes(6 * MiB);
    const w1 = await driver.writer('/tail/data', false);
    await w1.write(a);
    await w1.close();
    assert.deepEqual(await uploadsOf(driver, '/tail/data'), [{ key: driver.key('/tail/data'), parts: [6 * MiB] }]);
    assert.deepEqual(await driver.list('/tail'), ['/tail/data']);
    const seen: string[] = [];
    await driver.walk('/', (info) => void seen.push(`${info.path} ${info.size}`));
    assert.deepEqual(seen, ['/tail 0', `/tail/data ${6 * MiB}`]);
    const w2 = await twin(driver).writer('/tail/data', true);
    await w2.write(Buffer.from('end'));
    await w2.commit();
    assert.ok((await driver.getContent('/tail/data')).equals(Buffer.concat([a, Buffer.from('end')])));
    assert.deepEqual(await uploadsOf(driver, '/tail'), []);
    const keys = await driver.client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: driver.key('/tail') }));
    assert.deepEqual(keys.Contents?.map((o) => o.Key), [driver.key('/tail/data')]);
  });

  it('deleting an unfinished file, or the directory above it, leaves no upload and no state behind', async () => {
    const driver = make({ chunksize: 6 * MiB });
    for (const path of ['/del/one/data', '/del/two/data']) {
      const w = await driver.writer(path, true);
      await w.write(randomBytes(6 * MiB + 7));
      await w.close();
    }
    assert.equal((await uploadsOf(driver, '/del')).length, 2);
    await driver.delete('/del/one/data');
    assert.deepEqual((await uploadsOf(driver, '/del')).map((u) => u.key), [driver.key('/del/two/data')]);
    await assert.rejects(driver.stat('/del/one/data'), PathNotFoundError);
    await driver.delete('/del');
    assert.deepEqual(await uploadsOf(driver, '/del'), []);
    const keys = await driver.client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: driver.key('/del') }));
    assert.equal(keys.KeyCount, 0);
  });

  it('continues a complete object with a pending state left by an interrupted commit from the object', async () => {
    const driver = make({ chunksize: 6 * MiB });
    const w = await driver.writer('/both/data', true);
    await w.write(Buffer.from('stale'));
    await w.close(); // a pending state ...
    await driver.putContent('/both/data', Buffer.from('complete')); // ... and the object a commit made
    assert.equal((await driver.stat('/both/data')).size, 8);
    const again = await twin(driver).writer('/both/data', true);
    assert.equal(again.size, 8);
    await again.write(Buffer.from('+more'));
    await again.commit();
    assert.equal((await driver.getContent('/both/data')).toString(), 'complete+more');
    const keys = await driver.client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: driver.key('/both') }));
    assert.deepEqual(keys.Contents?.map((o) => o.Key), [driver.key('/both/data')]);
  });

  it('moves above multipartcopythresholdsize by multipart copy', async () => {
    const driver = make({ multipartcopythresholdsize: 6 * MiB, multipartcopychunksize: 5 * MiB, multipartcopymaxconcurrency: 2 });
    const data = randomBytes(17 * MiB + 3);
    await driver.putContent('/mv/src', data);
    await driver.move('/mv/src', '/mv/dst');
    assert.ok((await driver.getContent('/mv/dst')).equals(data));
    await assert.rejects(driver.stat('/mv/src'));
  });

  it('lists, walks and deletes directories of more than 1000 entries (paging, batches)', async () => {
    const driver = make();
    const names = Array.from({ length: 1003 }, (_, i) => `/many/f${String(i).padStart(4, '0')}`);
    for (let i = 0; i < names.length; i += 50) await Promise.all(names.slice(i, i + 50).map((n) => driver.putContent(n, Buffer.from('x'))));
    assert.deepEqual(await driver.list('/many'), names);
    let seen = 0;
    await driver.walk('/many', () => void seen++, { startAfter: names[999] });
    assert.equal(seen, 3);
    await driver.delete('/many');
    await assert.rejects(driver.list('/many'));
  });

  it('hands out pre-signed GET URLs that the store serves, and refuses when tampered with', async () => {
    const driver = make({});
    const data = randomBytes(3000);
    await driver.putContent('/blob/data', data);
    const url = (await driver.redirectURL({ method: 'GET' }, '/blob/data'))!;
    assert.match(url, /X-Amz-Expires=1200/);
    const res = await fetch(url);
    assert.equal(res.status, 200);
    assert.ok(Buffer.from(await res.arrayBuffer()).equals(data));
    const tampered = url.replace(/X-Amz-Signature=([0-9a-f])/, (_, c: string) => `X-Amz-Signature=${c === '0' ? '1' : '0'}`);
    assert.notEqual(tampered, url);
    const refused = await fetch(tampered);
    await refused.arrayBuffer();
    assert.equal(refused.status, 403);
    const otherKey = await fetch(url.replace('/blob/data', '/blob/other'));
    await otherKey.arrayBuffer();
    assert.equal(otherKey.status, 403);
  });

  it('honours storage.redirect.expiry', async () => {
    const driver = new S3Driver({ ...s3Options(ceph, bucket), redirectExpiryMs: 90_000 });
    drivers.push(driver);
    assert.match((await driver.redirectURL({ method: 'GET' }, '/x'))!, /X-Amz-Expires=90(&|$)/);
  });

  it('fails start-up with a clear message when the bucket does not exist', async () => {
    const driver = new S3Driver(s3Options(ceph, 'no-such-bucket-here'));
    drivers.push(driver);
    await assert.rejects(driver.ready(), /storage\.s3\.bucket: bucket "no-such-bucket-here" does not exist/);
    await make().ready();
  });

  it('berth serve stops with one clear line when the bucket does not exist', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'berth-s3-serve-'));
    const file = join(dir, 'config.yml');
    await writeFile(file, stringify({ version: '0.1', storage: { s3: ceph.params('missing-bucket') }, http: { addr: '127.0.0.1:0' } }));
    const cli = fileURLToPath(new URL('../../src/cli.ts', import.meta.url));
    await assert.rejects(run(process.execPath, ['--import', 'tsx', cli, 'serve', file], { timeout: 30_000 }), (err: { code: number; stderr: string }) => {
      assert.equal(err.code, 1);
      assert.match(err.stderr, /berth: s3: storage\.s3\.bucket: bucket "missing-bucket" does not exist at http:\/\/127\.0\.0\.1:\d+; create it first/);
      return true;
    });
    await rm(dir, { recursive: true, force: true });
  });

  it('fails start-up when the credentials are wrong', async () => {
    const driver = new S3Driver(s3Options(ceph, bucket, { secretkey: 'wrong' }));
    drivers.push(driver);
    await assert.rejects(driver.ready(), /access to bucket .* was denied/);
  });
});
