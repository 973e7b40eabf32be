// berth and Debian's docker-registry (CNCF Distribution 2.8.2+ds1) on ONE filesystem root, after
// berth stored sha512 content beside sha256 images (blobs/sha512, _layers/sha512,
// _manifests/revisions/sha512, berth's referrers/sha512): Distribution still serves every sha256
// image, and its garbage-collect keeps every image and frees only the unreferenced sha512 blob.
//
// What Distribution 2.8.2 does with the second algorithm, observed and asserted below:
// - its layout has one directory per algorithm too, and it reads sha512 content written by berth:
//   manifests and blobs by their sha512 digests, with Docker-Content-Digest in sha512;
// - its garbage-collect walks blobs/sha512 and the sha512 revisions: it marks what sha512
//   manifests reference, and deletes an unreferenced sha512 blob like a sha256 one;
// - pushed to directly, it verifies a sha512 `digest` (and accepts `digest-algorithm=sha512`) but
//   stores the blob under its sha256 digest, which its 201 answers: only berth stores sha512. The
//   sha512 link it writes is an alias holding the sha256 digest; berth does not follow it (404 by
//   the sha512 digest on berth, docs/decisions.md).

import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { indexDifferences, reconcileNow } from '../helpers/index-sync.js';
import { pushBlob, randomBlob, sha256, sha512 } from '../helpers/blobs.js';
import { buildImage, pushImageOK, type Image } from '../helpers/images.js';
import { REFERENCE_REGISTRY_BIN, startReferenceRegistry, type ReferenceRegistry } from '../helpers/reference-registry.js';
import { assertTool, needTool } from '../helpers/tools.js';
import { assertServed, runCommand } from '../gc/harness.js';

describe('a root with sha512 content beside sha256 images, shared with Distribution 2.8', needTool('docker-registry', 'the sha512 shared-root interop test'), () => {
  let ref: ReferenceRegistry;
  let berth: TestRegistry;
  /** what both registries must serve: [repository, image, tag] */
  const images: [string, Image, string | undefined][] = [];
  const lone = randomBlob(1000);

  before(async () => {
    assertTool('docker-registry', 'the sha512 shared-root interop test');
    ref = await startReferenceRegistry({ deleteEnabled: true });
    berth = await startBerth({ metadata: {} }, { driver: 'filesystem', root: ref.rootdirectory });
    const url = berth.url;
    // sha256 images first
    const app = await pushImageOK(url, 'interop/app', buildImage('docker-v2'), 'v1');
    images.push(['interop/app', app, 'v1']);
    images.push(['interop/app', await pushImageOK(url, 'interop/app', buildImage('oci-manifest')), undefined]);
    const index = buildImage('oci-index');
    for (const child of index.children) await pushImageOK(url, 'interop/multi', child);
    images.push(['interop/multi', await pushImageOK(url, 'interop/multi', index, 'latest'), 'latest']);
    // then sha512 content beside them: an image by its sha512 digest, a tagged image of sha512
    // blobs, a sha512 referrer of a sha256 image, and a blob nothing references
    images.push(['interop/app', await pushImageOK(url, 'interop/app', buildImage('oci-manifest', { algorithm: 'sha512' })), undefined]);
    const tagged = await pushImageOK(url, 'interop/sha512', buildImage('oci-manifest', { algorithm: 'sha512' }), 'tagged');
    images.push(['interop/sha512', { ...tagged, digest: sha256(tagged.body) }, 'tagged']);
    images.push(['interop/app', await pushImageOK(url, 'interop/app', buildImage('oci-artifact', { subject: app, algorithm: 'sha512' })), undefined]);
    assert.equal((await pushBlob(url, 'interop/app', lone.data, sha512(lone.data))).status, 201);
  });
  after(async () => {
    await berth?.stop();
    await ref?.stop();
  });

  const distributionCollect = async (flags: string[]) => {
    const result = await runCommand(REFERENCE_REGISTRY_BIN, ['garbage-collect', ...flags, ref.configPath]);
    assert.equal(result.code, 0, result.stdout + result.stderr);
    return [...result.stdout.matchAll(/^blob eligible for deletion: (\S+)/gm)].map((m) => m[1]);
  };

  it('Distribution serves every image, the sha256 ones and the sha512 ones, by tag and by digest', async () => {
    for (const [name, image, tag] of images) {
      await assertServed(ref.url, name, image, tag ?? image.digest);
      if (tag) await assertServed(ref.url, name, image);
    }
    const head = await fetch(`${ref.url}/v2/interop/app/blobs/${sha512(lone.data)}`, { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(head.headers.get('docker-content-digest'), sha512(lone.data));
    const tags = (await (await fetch(`${ref.url}/v2/interop/app/tags/list`)).json()) as { tags: string[] };
    assert.deepEqual(tags.tags, ['v1']);
  });

  it("Distribution's garbage-collect keeps every image and frees only the unreferenced sha512 blob; both registries still serve everything", async () => {
    assert.deepEqual(await distributionCollect(['--dry-run']), [sha512(lone.data)]);
    assert.deepEqual(await distributionCollect([]), [sha512(lone.data)]);
    for (const base of [ref.url, berth.url]) {
      for (const [name, image, tag] of images) await assertServed(base, name, image, tag ?? image.digest);
      assert.equal((await fetch(`${base}/v2/interop/app/blobs/${sha512(lone.data)}`, { method: 'HEAD' })).status, 404);
    }
  });

  it('pushed to directly, Distribution checks a sha512 digest but stores the blob under sha256 (the sha512 digest an alias berth does not follow)', async () => {
    const blob = randomBlob(300);
    const post = await fetch(`${ref.url}/v2/interop/direct/blobs/uploads/?digest-algorithm=sha512`, { method: 'POST' });
    assert.equal(post.status, 202);
    const location = new URL(post.headers.get('location')!, ref.url);
    location.searchParams.set('digest', sha512(blob.data));
    const put = await fetch(location, { method: 'PUT', body: blob.data });
    assert.equal(put.status, 201);
    assert.equal(put.headers.get('docker-content-digest'), blob.digest);
    // it also links the sha512 digest as an alias of the sha256 blob, and serves it by either
    const alias = await fetch(`${ref.url}/v2/interop/direct/blobs/${sha512(blob.data)}`, { method: 'HEAD' });
    assert.equal(alias.status, 200);
    assert.equal(alias.headers.get('docker-content-digest'), blob.digest);
    // berth serves what it stores, by its own digest; it does not follow cross-algorithm aliases
    assert.equal((await fetch(`${berth.url}/v2/interop/direct/blobs/${blob.digest}`, { method: 'HEAD' })).status, 200);
    assert.equal((await fetch(`${berth.url}/v2/interop/direct/blobs/${sha512(blob.data)}`, { method: 'HEAD' })).status, 404);
  });

  it("berth's metadata index equals storage once its reconciler ran over Distribution's collection and pushes", async () => {
    // Distribution's collection deleted the lone blob's content under its link, which no repository
    // directory shows: the reconciler's full pass (once per FULL_PASS_MS) reads every repository
    await reconcileNow(berth, { full: true });
    assert.deepEqual(await indexDifferences(berth), []);
  });
});
