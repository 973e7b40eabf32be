/**
 * Blob reads with the s3 driver: 307 to a pre-signed URL of the store (spec 1, 4.6), HEAD answered
 * by the registry, storage.redirect.disable, and the cloudfront middleware (spec 2.10): signed CDN
 * URLs, and the plain S3 URL for clients inside the filtered IP ranges.
 */
import assert from 'node:assert/strict';
import { createPublicKey, generateKeyPairSync, verify } from 'node:crypto';
import { mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { pushBlob, randomBlob, sha512 } from '../helpers/blobs.js';
import { CEPH_TOOLS, stopSharedCeph } from '../helpers/ceph.js';
import { needTools } from '../helpers/tools.js';

after(() => stopSharedCeph());

const blob = randomBlob(200_000);
const blobPath = (digest: string) => `/docker/registry/v2/blobs/sha256/${digest.slice(7, 9)}/${digest.slice(7)}/data`;

describe('s3: blob redirects', needTools(CEPH_TOOLS, 'the s3 redirect tests'), () => {
  let registry: TestRegistry;
  before(async () => {
    registry = await startBerth({}, { driver: 's3' });
    assert.equal((await pushBlob(registry.url, 'lib/app', blob.data)).status, 201);
  });
  after(() => registry?.stop());
  const blobURL = () => `${registry.url}/v2/lib/app/blobs/${blob.digest}`;

  it('GET answers 307 with a pre-signed store URL and Registry-Content-Digest; the store serves the blob', async () => {
    const res = await fetch(blobURL(), { redirect: 'manual' });
    assert.equal(res.status, 307);
    assert.equal(res.headers.get('registry-content-digest'), blob.digest);
    assert.equal(res.headers.get('docker-content-digest'), blob.digest);
    const location = res.headers.get('location')!;
    const s3 = registry.s3 as { regionendpoint: string; bucket: string; rootdirectory: string };
    assert.ok(location.startsWith(`${s3.regionendpoint}/${s3.bucket}${s3.rootdirectory}${blobPath(blob.digest)}?`), location);
    assert.match(location, /X-Amz-Expires=1200&/);
    const fromStore = await fetch(location);
    assert.equal(fromStore.status, 200);
    assert.ok(Buffer.from(await fromStore.arrayBuffer()).equals(blob.data));
    // a client that follows redirects gets the blob
    const followed = await fetch(blobURL());
    assert.ok(Buffer.from(await followed.arrayBuffer()).equals(blob.data));
  });

  it('the store refuses a tampered URL with 403', async () => {
    const location = (await fetch(blobURL(), { redirect: 'manual' })).headers.get('location')!;
    const url = new URL(location);
    const expires = url.searchParams.get('X-Amz-Expires')!;
    url.searchParams.set('X-Amz-Expires', String(Number(expires) + 1));
    const res = await fetch(url);
    await res.arrayBuffer();
    assert.equal(res.status, 403);
  });

  // what uploads.test.ts checked on s3 before it ran on filesystem and inmemory only (issue 27)
  it('a sha512 blob: GET answers 307 with the sha512 digest headers; the store serves its bytes', async () => {
    const data = randomBlob(3000).data;
    const digest = sha512(data);
    assert.equal((await pushBlob(registry.url, 'lib/sha512', data, digest)).status, 201);
    const res = await fetch(`${registry.url}/v2/lib/sha512/blobs/${digest}`, { redirect: 'manual' });
    assert.equal(res.status, 307);
    assert.equal(res.headers.get('registry-content-digest'), digest);
    assert.equal(res.headers.get('docker-content-digest'), digest);
    const fromStore = await fetch(res.headers.get('location')!);
    assert.equal(fromStore.status, 200);
    assert.ok(Buffer.from(await fromStore.arrayBuffer()).equals(data));
  });

  it('HEAD is answered by the registry', async () => {
    const res = await fetch(blobURL(), { method: 'HEAD', redirect: 'manual' });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-length'), String(blob.data.length));
    assert.equal(res.headers.get('registry-content-digest'), blob.digest);
    assert.equal(res.headers.get('location'), null);
  });

  it('storage.redirect.disable streams the bytes; storage.redirect.expiry sets the validity', async () => {
    const streaming = await startBerth({ storage: { redirect: { disable: true } } }, { driver: 's3', s3: registry.s3 });
    const short = await startBerth({ storage: { redirect: { expiry: '90s' } } }, { driver: 's3', s3: registry.s3 });
    try {
      const res = await fetch(`${streaming.url}/v2/lib/app/blobs/${blob.digest}`, { redirect: 'manual' });
      assert.equal(res.status, 200);
      assert.ok(Buffer.from(await res.arrayBuffer()).equals(blob.data));
      const redirected = await fetch(`${short.url}/v2/lib/app/blobs/${blob.digest}`, { redirect: 'manual' });
      assert.equal(redirected.status, 307);
      assert.match(redirected.headers.get('location')!, /X-Amz-Expires=90&/);
    } finally {
      await streaming.stop();
      await short.stop();
    }
  });
});

describe('s3 with the cloudfront middleware', needTools(CEPH_TOOLS, 'the cloudfront middleware tests'), () => {
  let origin: TestRegistry;
  let keyFile: string;
  let publicPem: string;
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'berth-cloudfront-'));
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
    keyFile = join(dir, 'pk-APKAEXAMPLE.pem');
    await writeFile(keyFile, privateKey.export({ type: 'pkcs1', format: 'pem' }));
    publicPem = publicKey.export({ type: 'spki', format: 'pem' }).toString();
    origin = await startBerth({}, { driver: 's3' });
    assert.equal((await pushBlob(origin.url, 'lib/app', blob.data)).status, 201);
  });
  after(() => origin?.stop());

  const withCloudFront = (options: Record<string, unknown>) =>
    startBerth(
      { middleware: { storage: [{ name: 'cloudfront', options: { baseurl: 'https://d111111abcdef8.cloudfront.net/', privatekey: keyFile, keypairid: 'APKAEXAMPLE', ...options } }] } },
      { driver: 's3', s3: origin.s3 },
    );

  it('redirects blob GETs to baseurl + the object path, signed with a canned policy that the public key verifies', async () => {
    const registry = await withCloudFront({ duration: '30m' });
    try {
      const before = Math.floor(Date.now() / 1000);
      const res = await fetch(`${registry.url}/v2/lib/app/blobs/${blob.digest}`, { redirect: 'manual' });
      assert.equal(res.status, 307);
      assert.equal(res.headers.get('registry-content-digest'), blob.digest);
      const location = new URL(res.headers.get('location')!);
      assert.equal(`${location.origin}${location.pathname}`, `https://d111111abcdef8.cloudfront.net${blobPath(blob.digest)}`);
      assert.deepEqual([...location.searchParams.keys()], ['Expires', 'Key-Pair-Id', 'Signature']);
      assert.equal(location.searchParams.get('Key-Pair-Id'), 'APKAEXAMPLE');
      const expires = Number(location.searchParams.get('Expires'));
      assert.ok(expires >= before + 30 * 60 - 1 && expires <= before + 30 * 60 + 5, `Expires ${expires}`);
      const resource = `${location.origin}${location.pathname}`;
      const policy = `{"Statement":[{"Resource":"${resource}","Condition":{"DateLessThan":{"AWS:EpochTime":${expires}}}}]}`;
      const signature = Buffer.from(location.searchParams.get('Signature')!.replace(/-/g, '+').replace(/_/g, '=').replace(/~/g, '/'), 'base64');
      assert.ok(verify('RSA-SHA1', Buffer.from(policy), createPublicKey(publicPem), signature), 'signature does not verify');
      assert.ok(!verify('RSA-SHA1', Buffer.from(policy.replace('/data', '/datb')), createPublicKey(publicPem), signature));
      // pushes and HEAD are untouched
      const head = await fetch(`${registry.url}/v2/lib/app/blobs/${blob.digest}`, { method: 'HEAD', redirect: 'manual' });
      assert.equal(head.status, 200);
      assert.equal((await pushBlob(registry.url, 'lib/other', randomBlob(100).data)).status, 201);
    } finally {
      await registry.stop();
    }
  });

  it('ipfilteredby: clients inside the ranges (of the regions) get the plain S3 URL', async () => {
    const ranges = join(dir, 'ip-ranges.json');
    await writeFile(
      ranges,
      JSON.stringify({
        prefixes: [
          { ip_prefix: '127.0.0.0/8', region: 'us-west-2', service: 'AMAZON' },
          { ip_prefix: '10.0.0.0/8', region: 'eu-west-1', service: 'AMAZON' },
        ],
        ipv6_prefixes: [{ ipv6_prefix: '::1/128', region: 'us-west-2', service: 'AMAZON' }],
      }),
    );
    const cases: [Record<string, unknown>, 's3' | 'cdn'][] = [
      [{ ipfilteredby: 'aws', iprangesurl: ranges }, 's3'],
      [{ ipfilteredby: 'awsregion', awsregion: 'us-west-2', iprangesurl: `file://${ranges}` }, 's3'],
      [{ ipfilteredby: 'awsregion', awsregion: 'eu-west-1, ap-south-1', iprangesurl: ranges }, 'cdn'],
      [{ ipfilteredby: 'none', iprangesurl: ranges }, 'cdn'],
    ];
    for (const [options, expected] of cases) {
      const registry = await withCloudFront(options);
      try {
        const res = await fetch(`${registry.url}/v2/lib/app/blobs/${blob.digest}`, { redirect: 'manual' });
        assert.equal(res.status, 307);
        const location = res.headers.get('location')!;
        assert.equal(location.startsWith('https://d111111abcdef8.cloudfront.net/') ? 'cdn' : 's3', expected, `${JSON.stringify(options)}: ${location}`);
        if (expected === 's3') {
          const fromStore = await fetch(location);
          assert.ok(Buffer.from(await fromStore.arrayBuffer()).equals(blob.data));
        }
      } finally {
        await registry.stop();
      }
    }
  });
});
