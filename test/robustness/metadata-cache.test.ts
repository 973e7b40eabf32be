/**
 * The metadata cache across processes (issue 16): two `berth serve` processes on one filesystem
 * root, each with its own cache (`inmemory`) or sharing one through a real redis-server (`redis`).
 * Whatever one process pushes, re-tags or deletes, the other answers at once as storage says, even
 * when it cached the old state (the root is left 2 s to settle first, so the filesystem vouches
 * for the directories and the cache is really used). With Redis, a process serves a manifest
 * another one read, without reading its content from storage.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { pushBlob, randomBlob } from '../helpers/blobs.js';
import { startBerthProcess, type BerthProcess } from '../helpers/berth-process.js';
import { buildImage, pushImageOK, type Image } from '../helpers/images.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { needTool } from '../helpers/tools.js';

const REPO = 'cache/app';
/** longer than the filesystem driver's margin before it vouches for a directory (2 s) */
const SETTLE_MS = 2300;

async function manifest(base: string, reference: string, method: 'GET' | 'HEAD' = 'GET'): Promise<{ status: number; digest: string | null; body: Buffer }> {
  const res = await fetch(`${base}/v2/${REPO}/manifests/${reference}`, { method, headers: { accept: 'application/vnd.oci.image.manifest.v1+json' } });
  return { status: res.status, digest: res.headers.get('docker-content-digest'), body: Buffer.from(await res.arrayBuffer()) };
}

async function blobStatus(base: string, digest: string): Promise<number> {
  return (await fetch(`${base}/v2/${REPO}/blobs/${digest}`, { method: 'HEAD' })).status;
}

function blobFile(root: string, digest: string): string {
  const hex = digest.slice('sha256:'.length);
  return join(root, 'docker/registry/v2/blobs/sha256', hex.slice(0, 2), hex, 'data');
}

for (const mode of ['inmemory', 'redis'] as const) {
  const options = mode === 'redis' ? needTool('redis-server', 'the metadata cache shared through Redis') : {};
  describe(`metadata cache across two processes on one root (${mode})`, options, () => {
    let redis: TestRedis | undefined;
    let root: string;
    let a: BerthProcess;
    let b: BerthProcess;

    before(async () => {
      root = await mkdtemp(join(tmpdir(), 'berth-metacache-'));
      if (mode === 'redis') redis = await startRedis();
      const config = { storage: { cache: { blobdescriptor: mode } }, ...(redis && { redis: { addr: redis.addr } }) };
      [a, b] = await Promise.all([startBerthProcess({ root, config }), startBerthProcess({ root, config })]);
    });
    after(async () => {
      await Promise.all([a?.stop(), b?.stop()]);
      await redis?.stop();
      await rm(root, { recursive: true, force: true });
    });

    it('a tag moved through one process is served by the other at once, GET and HEAD', async () => {
      const first = await pushImageOK(a.url, REPO, buildImage('oci-manifest'), 'moving');
      await sleep(SETTLE_MS);
      assert.equal((await manifest(b.url, 'moving')).digest, first.digest);
      assert.equal((await manifest(b.url, 'moving', 'HEAD')).digest, first.digest);
      const second = await pushImageOK(a.url, REPO, buildImage('oci-manifest'), 'moving');
      const got = await manifest(b.url, 'moving');
      assert.equal(got.digest, second.digest);
      assert.ok(got.body.equals(second.body));
      assert.equal((await manifest(b.url, 'moving', 'HEAD')).digest, second.digest);
      await sleep(SETTLE_MS);
      assert.equal((await manifest(b.url, 'moving')).digest, second.digest, 'and once the root settled again');
    });

    it('a manifest deleted through one process is unknown on the other at once, by digest and by tag', async () => {
      const image = await pushImageOK(a.url, REPO, buildImage('oci-manifest'), 'doomed');
      await sleep(SETTLE_MS);
      assert.equal((await manifest(b.url, 'doomed')).status, 200);
      assert.equal((await manifest(b.url, image.digest, 'HEAD')).status, 200);
      assert.equal((await fetch(`${a.url}/v2/${REPO}/manifests/${image.digest}`, { method: 'DELETE' })).status, 202);
      assert.equal((await manifest(b.url, image.digest)).status, 404);
      assert.equal((await manifest(b.url, image.digest, 'HEAD')).status, 404);
      assert.equal((await manifest(b.url, 'doomed')).status, 404);
      // pushed again by digest: back at once
      await pushImageOK(a.url, REPO, image);
      assert.equal((await manifest(b.url, image.digest)).status, 200);
    });

    it('a push through one process is served by the other at once (blob and manifest)', async () => {
      const image: Image = buildImage('oci-manifest');
      assert.equal((await manifest(b.url, image.digest)).status, 404);
      assert.equal(await blobStatus(b.url, image.blobs[0].digest), 404);
      await pushImageOK(a.url, REPO, image, 'fresh');
      assert.equal(await blobStatus(b.url, image.blobs[0].digest), 200);
      assert.ok((await manifest(b.url, 'fresh')).body.equals(image.body));
    });

    it('a blob deleted through one process is unknown on the other at once', async () => {
      const blob = randomBlob(300);
      assert.equal((await pushBlob(a.url, REPO, blob.data, blob.digest)).status, 201);
      await sleep(SETTLE_MS);
      assert.equal(await blobStatus(b.url, blob.digest), 200);
      assert.equal((await fetch(`${a.url}/v2/${REPO}/blobs/${blob.digest}`, { method: 'DELETE' })).status, 202);
      assert.equal(await blobStatus(b.url, blob.digest), 404);
      assert.equal((await pushBlob(a.url, REPO, blob.data, blob.digest)).status, 201);
      assert.equal(await blobStatus(b.url, blob.digest), 200, 'linked again');
    });

    if (mode === 'redis') {
      it("a process serves a manifest's content that another read, from Redis (checked against its digest)", async () => {
        const image = await pushImageOK(a.url, REPO, buildImage('oci-manifest'));
        assert.equal((await manifest(a.url, image.digest)).status, 200); // A reads it: into Redis
        // the stored copy spoiled behind both registries' backs: only Redis still has the bytes
        await writeFile(blobFile(root, image.digest), Buffer.alloc(image.body.length, 0x20));
        const got = await manifest(b.url, image.digest);
        assert.equal(got.status, 200);
        assert.ok(got.body.equals(image.body), 'B served the bytes A had read');
      });

      it('bytes in Redis that do not match the digest are ignored', async () => {
        const image = await pushImageOK(a.url, REPO, buildImage('oci-manifest'));
        const key = `berth:cache:manifest:${image.digest}`;
        const { Redis } = await import('ioredis');
        const client = new Redis({ host: '127.0.0.1', port: redis!.port, lazyConnect: true });
        try {
          await client.connect();
          await client.set(key, 'not the manifest');
          const got = await manifest(b.url, image.digest);
          assert.ok(got.body.equals(image.body), 'served from storage');
        } finally {
          client.disconnect();
        }
      });
    }
  });
}
