/**
 * What the S3 driver sends, checked against a recording fake endpoint (no Ceph needed): every
 * write carries storageclass, objectacl and the encryption headers; a store that keeps failing
 * is retried with back-off and then reported as StorageUnavailableError (503 at the HTTP edge).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { validateConfig } from '../../src/config/load.js';
import { pino } from 'pino';
import { StorageUnavailableError } from '../../src/storage/driver.js';
import { S3Driver } from '../../src/storage/s3/driver.js';
import { startBerth } from '../helpers/berth.js';
import { startFakeS3, type FakeS3 } from '../helpers/fake-s3.js';

const MiB = 1024 * 1024;

function s3Params(fake: FakeS3, extra: Record<string, unknown> = {}) {
  return { region: 'us-east-1', regionendpoint: fake.endpoint, forcepathstyle: true, accesskey: 'k', secretkey: 's', bucket: 'b', ...extra };
}

function driverFor(fake: FakeS3, extra: Record<string, unknown> = {}, maxAttempts = 3): S3Driver {
  const config = validateConfig({ version: '0.1', storage: { s3: s3Params(fake, extra) } }, 'test');
  return new S3Driver({ ...config.storage.s3!, maxAttempts });
}

describe('s3 driver: request headers and failures (fake endpoint)', () => {
  let fake: FakeS3;
  before(async () => {
    fake = await startFakeS3();
  });
  after(() => fake.close());

  const writes = () =>
    fake.requests.filter(
      (r) => (r.method === 'PUT' && !new URL(r.url, 'http://x').searchParams.has('partNumber')) || (r.method === 'POST' && new URL(r.url, 'http://x').searchParams.has('uploads')),
    );

  it('sends storage class, ACL and SSE-KMS headers with every object write', async () => {
    const driver = driverFor(fake, {
      storageclass: 'REDUCED_REDUNDANCY',
      objectacl: 'bucket-owner-full-control',
      encrypt: true,
      keyid: 'arn:aws:kms:us-east-1:111122223333:key/test',
      chunksize: 6 * MiB,
      multipartcopythresholdsize: 5 * MiB,
      rootdirectory: '/root',
    });
    fake.requests.length = 0;
    await driver.putContent('/a/small', Buffer.from('x')); // PutObject
    const w = await driver.writer('/a/large', false); // CreateMultipartUpload
    await w.write(Buffer.alloc(7 * MiB));
    await w.commit();
    fake.headSize = 1;
    await driver.move('/a/small', '/a/moved'); // CopyObject
    fake.headSize = 12 * MiB;
    await driver.move('/a/large', '/a/moved-large'); // CreateMultipartUpload for the copy
    await driver.close();

    const seen = writes();
    assert.deepEqual(
      seen.map((r) => `${r.method} ${r.url.split('?')[0]}${r.headers['x-amz-copy-source'] ? ' (copy)' : ''}`),
      // large~pending: the writer's claim on its part numbers (s3/writer.ts), an object written like any other
      ['PUT /b/root/a/small', 'POST /b/root/a/large', 'PUT /b/root/a/large~pending', 'PUT /b/root/a/moved (copy)', 'POST /b/root/a/moved-large'],
    );
    for (const r of seen) {
      assert.equal(r.headers['x-amz-storage-class'], 'REDUCED_REDUNDANCY', `${r.method} ${r.url}`);
      assert.equal(r.headers['x-amz-acl'], 'bucket-owner-full-control', `${r.method} ${r.url}`);
      assert.equal(r.headers['x-amz-server-side-encryption'], 'aws:kms', `${r.method} ${r.url}`);
      assert.equal(r.headers['x-amz-server-side-encryption-aws-kms-key-id'], 'arn:aws:kms:us-east-1:111122223333:key/test');
    }
    // the parts themselves carry no object settings (S3 takes them from CreateMultipartUpload)
    assert.ok(fake.requests.some((r) => r.method === 'PUT' && r.url.includes('partNumber=')));
  });

  it('sends AES256 without a key id, and the default STANDARD/private otherwise', async () => {
    const sse = driverFor(fake, { encrypt: true });
    fake.requests.length = 0;
    await sse.putContent('/x', Buffer.from('x'));
    await sse.close();
    assert.equal(writes()[0].headers['x-amz-server-side-encryption'], 'AES256');
    assert.equal(writes()[0].headers['x-amz-server-side-encryption-aws-kms-key-id'], undefined);

    const plain = driverFor(fake, { keyid: 'ignored-unless-encrypt', useragent: 'berth-test-agent/1' });
    fake.requests.length = 0;
    await plain.putContent('/y', Buffer.from('y'));
    await plain.close();
    const [put] = writes();
    assert.equal(put.headers['x-amz-storage-class'], 'STANDARD');
    assert.equal(put.headers['x-amz-acl'], 'private');
    assert.equal(put.headers['x-amz-server-side-encryption'], undefined);
    assert.match(String(put.headers['user-agent']) + String(put.headers['x-amz-user-agent']), /berth-test-agent\/1/);
  });

  it('retries 503 SlowDown with back-off, then reports StorageUnavailableError', async () => {
    const driver = driverFor(fake);
    fake.requests.length = 0;
    fake.failWith = 503;
    try {
      const start = Date.now();
      await assert.rejects(driver.getContent('/z'), StorageUnavailableError);
      assert.equal(fake.requests.length, 3, 'maxAttempts 3: one request and two retries');
      assert.ok(Date.now() - start < 30_000);
      fake.requests.length = 0;
      fake.failWith = 500;
      await assert.rejects(driver.putContent('/z', Buffer.from('z')), StorageUnavailableError);
      assert.equal(fake.requests.length, 3);
    } finally {
      fake.failWith = undefined;
      await driver.close();
    }
  });

  it('logs a request that had to be retried, with its attempts (SDK client and signed reads)', async () => {
    const warnings: { msg: string; attempts?: number; operation?: string }[] = [];
    const logger = pino({ level: 'warn' }, { write: (line: string) => warnings.push(JSON.parse(line) as { msg: string }) });
    const config = validateConfig({ version: '0.1', storage: { s3: s3Params(fake) } }, 't');
    const driver = new S3Driver({ ...config.storage.s3!, maxAttempts: 3, logger });
    fake.failWith = 503;
    try {
      await assert.rejects(driver.putContent('/z', Buffer.from('z')), StorageUnavailableError);
      await assert.rejects(driver.getContent('/z'), StorageUnavailableError);
      const retried = warnings.filter((w) => w.msg === 'S3 request failed after retries');
      assert.equal(retried.length, 2, JSON.stringify(warnings));
      assert.deepEqual(
        retried.map((w) => [w.operation, w.attempts]),
        [
          ['PutObjectCommand', 3],
          ['GetObject', 3],
        ],
      );
    } finally {
      fake.failWith = undefined;
      await driver.close();
    }
  });

  it('reads (undici, signed GET) retry 5xx with back-off, then report StorageUnavailableError; a 403 is not retried', async () => {
    const driver = driverFor(fake);
    fake.requests.length = 0;
    fake.failWith = 503;
    try {
      await assert.rejects(driver.reader('/z', 5, 10), StorageUnavailableError);
      assert.equal(fake.requests.length, 3, 'maxAttempts 3');
      const get = fake.requests[0];
      assert.equal(get.method, 'GET');
      assert.equal(get.headers.range, 'bytes=5-14');
      assert.equal(get.url, '/b/z');
      assert.match(String(get.headers.authorization), /^AWS4-HMAC-SHA256 Credential=k\/\d{8}\/us-east-1\/s3\/aws4_request, SignedHeaders=[^,]*range[^,]*, Signature=[0-9a-f]{64}$/);
      fake.requests.length = 0;
      fake.failWith = 403;
      await assert.rejects(driver.reader('/z'), (err: Error) => !(err instanceof StorageUnavailableError) && /GetObject \/z: unexpected status 403/.test(err.message));
      assert.equal(fake.requests.length, 1);
    } finally {
      fake.failWith = undefined;
      await driver.close();
    }
  });

  it('a streamed read with maxAttempts 1 asks the store once (the first request is the attempt)', async () => {
    const driver = driverFor(fake, {}, 1);
    fake.requests.length = 0;
    fake.failWith = 503;
    try {
      await assert.rejects(driver.reader('/z'), (err: Error) => err instanceof StorageUnavailableError && /GetObject \/z: status 503 \(after 1 attempts\)/.test(err.message));
      assert.equal(fake.requests.length, 1);
    } finally {
      fake.failWith = undefined;
      await driver.close();
    }
  });

  it('answers 503 with a JSON error body when the store keeps failing', async () => {
    const registry = await startBerth({ storage: { s3: s3Params(fake) } }, { driver: 'none' });
    try {
      fake.failWith = 500;
      const res = await fetch(`${registry.url}/v2/lib/x/blobs/sha256:${'a'.repeat(64)}`, { signal: AbortSignal.timeout(60_000) });
      assert.equal(res.status, 503);
      assert.match(res.headers.get('content-type') ?? '', /application\/json/);
      const body = (await res.json()) as { errors: { code: string; message: string }[] };
      assert.equal(body.errors[0].code, 'UNAVAILABLE');
      assert.match(body.errors[0].message, /storage backend is unavailable/);
    } finally {
      fake.failWith = undefined;
      await registry.stop();
    }
  });
});
