/**
 * The pull-through cache with its large fetches hashed on the hashing thread (src/crypto/hash-thread.ts):
 * a fetch of several write batches is hashed there, and its digest still decides what is cached.
 * A body of the right size whose bytes hash to another digest is not served whole and leaves
 * nothing under blobs/ and no upload behind.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { pushBlob, randomBlob, sha256, sha512 } from '../helpers/blobs.js';

const MiB = 1024 * 1024;

function blobFile(root: string, digest: string): string {
  const [algorithm, hex] = digest.split(':');
  return join(root, 'docker/registry/v2/blobs', algorithm, hex.slice(0, 2), hex, 'data');
}

function uploadsOf(root: string, name: string): string[] {
  const dir = join(root, 'docker/registry/v2/repositories', name, '_uploads');
  return existsSync(dir) ? readdirSync(dir) : [];
}

async function settled(check: () => boolean): Promise<void> {
  for (let i = 0; i < 100 && !check(); i++) await new Promise((resolve) => setTimeout(resolve, 20));
}

describe('pull-through fetches hashed on the hashing thread', () => {
  let upstream: TestRegistry;
  let mirror: TestRegistry;

  before(async () => {
    upstream = await startBerth({}, { driver: 'filesystem' });
    mirror = await startBerth({ proxy: { remoteurl: upstream.url } }, { driver: 'filesystem' });
  });
  after(async () => {
    await mirror?.stop();
    await upstream?.stop();
  });

  for (const algorithm of ['sha256', 'sha512'] as const) {
    it(`caches a ${algorithm} blob of several batches under its digest, with the upstream's bytes`, async () => {
      const data = randomBlob(5 * MiB + 12345).data;
      const digest = algorithm === 'sha256' ? sha256(data) : sha512(data);
      assert.equal((await pushBlob(upstream.url, `library/big-${algorithm}`, data, digest)).status, 201);
      const res = await fetch(`${mirror.url}/v2/library/big-${algorithm}/blobs/${digest}`);
      assert.equal(res.status, 200);
      assert.ok(Buffer.from(await res.arrayBuffer()).equals(data));
      await settled(() => existsSync(blobFile(mirror.root!, digest)));
      const stored = readFileSync(blobFile(mirror.root!, digest));
      assert.equal(`${algorithm}:${createHash(algorithm).update(stored).digest('hex')}`, digest);
    });
  }

  it('rejects a body of several batches whose bytes do not match the digest: not served whole, nothing cached, no upload left', async () => {
    const blob = randomBlob(3 * MiB);
    assert.equal((await pushBlob(upstream.url, 'library/corrupt-big', blob.data)).status, 201);
    // the upstream's stored bytes change under it, at the same size (berth does not re-hash what it serves)
    await writeFile(blobFile(upstream.root!, blob.digest), randomBlob(3 * MiB).data);
    const res = await fetch(`${mirror.url}/v2/library/corrupt-big/blobs/${blob.digest}`);
    if (res.status === 200) await assert.rejects(res.arrayBuffer(), 'the body breaks off rather than ending with the wrong bytes');
    else assert.equal(res.status, 502);
    await settled(() => uploadsOf(mirror.root!, 'library/corrupt-big').length === 0);
    assert.ok(!existsSync(blobFile(mirror.root!, blob.digest)), 'nothing cached under blobs/');
    assert.deepEqual(uploadsOf(mirror.root!, 'library/corrupt-big'), [], 'no upload left');
  });
});
