/**
 * The pull-through cache and sha512 content: a berth upstream (Distribution 2.8 serves berth's
 * sha512 content too, test/interop/sha512-shared-root.test.ts) holds images addressed by sha512;
 * the mirror fetches them by their sha512 digests, checks the bytes with sha512 as they arrive,
 * stores them under blobs/sha512, and stores nothing whose bytes do not match.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { pushBlob, randomBlob, sha512 } from '../helpers/blobs.js';
import { buildImage, pushImageOK, type Image } from '../helpers/images.js';

/** where a filesystem registry keeps a blob, by the digest's algorithm */
function blobFile(root: string, digest: string): string {
  const [algorithm, hex] = digest.split(':');
  return join(root, 'docker/registry/v2/blobs', algorithm, hex.slice(0, 2), hex, 'data');
}

describe('pull-through cache of sha512 content', () => {
  let upstream: TestRegistry;
  let mirror: TestRegistry;
  let image: Image;

  before(async () => {
    upstream = await startBerth({}, { driver: 'filesystem' });
    mirror = await startBerth({ proxy: { remoteurl: upstream.url } }, { driver: 'filesystem' });
    image = await pushImageOK(upstream.url, 'library/sha512', buildImage('oci-manifest', { algorithm: 'sha512' }));
  });
  after(async () => {
    await mirror?.stop();
    await upstream?.stop();
  });

  it('serves a manifest and its blobs by their sha512 digests with the upstream bytes, and caches them under sha512', async () => {
    const manifest = await fetch(`${mirror.url}/v2/library/sha512/manifests/${image.digest}`, { headers: { accept: image.mediaType } });
    assert.equal(manifest.status, 200);
    assert.equal(manifest.headers.get('docker-content-digest'), image.digest);
    assert.ok(Buffer.from(await manifest.arrayBuffer()).equals(image.body));
    for (const blob of image.blobs) {
      const res = await fetch(`${mirror.url}/v2/library/sha512/blobs/${blob.digest}`);
      assert.equal(res.status, 200, blob.digest);
      assert.equal(res.headers.get('docker-content-digest'), blob.digest);
      assert.ok(Buffer.from(await res.arrayBuffer()).equals(blob.data));
    }
    await new Promise((resolve) => setTimeout(resolve, 200)); // the fetch's commit after the last byte
    for (const digest of [image.digest, ...image.blobs.map((b) => b.digest)]) assert.ok(existsSync(blobFile(mirror.root!, digest)), `${digest} cached under sha512`);
  });

  it('checks fetched bytes with sha512: an upstream serving other bytes under a sha512 digest gets nothing cached', async () => {
    const blob = randomBlob(4096);
    const digest = sha512(blob.data);
    assert.equal((await pushBlob(upstream.url, 'library/corrupt', blob.data, digest)).status, 201);
    // the upstream's stored bytes change under it (berth does not re-hash what it serves)
    await writeFile(blobFile(upstream.root!, digest), randomBlob(4096).data);
    const res = await fetch(`${mirror.url}/v2/library/corrupt/blobs/${digest}`);
    if (res.status === 200) await assert.rejects(res.arrayBuffer(), 'the body breaks off rather than ending with the wrong bytes');
    else assert.equal(res.status, 502);
    await new Promise((resolve) => setTimeout(resolve, 200));
    assert.ok(!existsSync(blobFile(mirror.root!, digest)), 'nothing cached from bytes that do not match');
  });
});
