// berth and Debian's docker-registry (Distribution 2.8.2, its s3 driver) on ONE bucket and root
// directory of a Ceph radosgw: the key layout is Distribution's, so an image pushed through one is
// pulled through the other (blob GETs redirect to the store for both).

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { indexDifferences, reconcileNow } from '../helpers/index-sync.js';
import { CEPH_TOOLS, startCeph, type CephS3 } from '../helpers/ceph.js';
import { buildImage, pushImageOK, type Image } from '../helpers/images.js';
import { startReferenceRegistry, type ReferenceRegistry } from '../helpers/reference-registry.js';
import { needTools } from '../helpers/tools.js';

describe('berth and the reference registry on one S3 bucket', needTools([...CEPH_TOOLS, 'docker-registry'], 'the shared-bucket interop test'), () => {
  let ceph: CephS3;
  let ref: ReferenceRegistry;
  let berth: TestRegistry;
  let indexDir: string | undefined;
  before(async () => {
    ceph = await startCeph();
    const params = ceph.params(await ceph.createBucket('interop'), { rootdirectory: '/shared' });
    ref = await startReferenceRegistry({ deleteEnabled: true, config: { storage: { filesystem: undefined, s3: { ...params, v4auth: true } } } });
    // the metadata index on SQLite beside the test (S3 has no default place for it)
    indexDir = await mkdtemp(join(tmpdir(), 'berth-interop-index-'));
    berth = await startBerth({ metadata: { sqlite: { path: join(indexDir, 'metadata.sqlite') } } }, { driver: 's3', s3: params });
  });
  after(async () => {
    await berth?.stop();
    await ref?.stop();
    await ceph?.stop();
    if (indexDir) await rm(indexDir, { recursive: true, force: true });
  });

  async function assertPulled(base: string, name: string, image: Image, reference: string): Promise<void> {
    const manifest = await fetch(`${base}/v2/${name}/manifests/${reference}`, { headers: { accept: image.mediaType } });
    assert.equal(manifest.status, 200, await manifest.clone().text());
    assert.ok(Buffer.from(await manifest.arrayBuffer()).equals(image.body));
    for (const blob of image.blobs) {
      const head = await fetch(`${base}/v2/${name}/blobs/${blob.digest}`, { method: 'HEAD', redirect: 'manual' });
      assert.ok(head.status === 200 || head.status === 307, `HEAD ${head.status}`);
      const res = await fetch(`${base}/v2/${name}/blobs/${blob.digest}`, { redirect: 'manual' });
      assert.equal(res.status, 307, 'blob GETs redirect to the store');
      await res.arrayBuffer();
      const fromStore = await fetch(res.headers.get('location')!);
      assert.ok(Buffer.from(await fromStore.arrayBuffer()).equals(blob.data), `blob ${blob.digest}`);
    }
  }

  it('pushed through the reference, pulled through berth', async () => {
    const image = buildImage('docker-v2', { layers: 2 });
    await pushImageOK(ref.url, 'interop/from-ref', image, 'v1');
    await assertPulled(berth.url, 'interop/from-ref', image, 'v1');
    await reconcileNow(berth); // the pass berth's scheduler runs every metadata.reconcile.interval: Distribution's push in the index
    const tags = (await (await fetch(`${berth.url}/v2/interop/from-ref/tags/list`)).json()) as { tags: string[] };
    assert.deepEqual(tags.tags, ['v1']);
  });

  it('pushed through berth, pulled through the reference', async () => {
    const image = buildImage('oci-manifest', { layers: 2 });
    await pushImageOK(berth.url, 'interop/from-berth', image, 'v2');
    await assertPulled(ref.url, 'interop/from-berth', image, 'v2');
    assert.deepEqual(await indexDifferences(berth), []);
  });
});
