/**
 * The offline collection's cases, run for each storage driver (filesystem.test.ts, s3.test.ts,
 * inmemory.unit.test.ts): images are pushed through a running berth, so the layout is the real one.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import * as layout from '../../src/registry/layout.js';
import type { Digest } from '../../src/registry/digest.js';
import { startBerth } from '../helpers/berth.js';
import { buildImage, pushImageOK, type Image } from '../helpers/images.js';
import { assertServed, manifestStatus, sharingLayer, startStore, summaryOf, type Store, type StoreKind } from './harness.js';

/** every blob an image (and its children) brings, manifests included */
function digestsOf(image: Image): string[] {
  return [image.digest, ...image.blobs.map((b) => b.digest), ...image.children.flatMap(digestsOf)];
}

async function deleteManifest(base: string, name: string, digest: string): Promise<void> {
  const res = await fetch(`${base}/v2/${name}/manifests/${digest}`, { method: 'DELETE' });
  assert.equal(res.status, 202);
}

export function describeCollection(kind: StoreKind, options: { skip?: string | false } = {}): void {
  describe(`garbage-collect on ${kind}`, { skip: options.skip ?? false }, () => {
    let store: Store;
    let url: string;
    /** what the cases keep: a fresh berth on the collected storage serves it all (the last case) */
    const kept: { name: string; image: Image; tag?: string }[] = [];
    before(async () => {
      store = await startStore(kind);
      url = store.berth.url;
    });
    after(async () => store?.stop());
    const keep = (name: string, image: Image, tag?: string) => kept.push({ name, image, tag });

    it("frees a deleted image's own blobs and layer links, keeps a layer another image shares; --dry-run deletes nothing", async () => {
      const name = 'gc/deleted';
      const kept = await pushImageOK(url, name, buildImage('docker-v2', { layers: 2 }), 'kept');
      const gone = await pushImageOK(url, name, sharingLayer(buildImage('docker-v2', { layers: 2 }), kept.blobs[1]), 'gone');
      await deleteManifest(url, name, gone.digest);
      const own = [gone.digest, gone.blobs[0].digest, gone.blobs[2].digest];
      const ownBytes = gone.body.length + gone.blobs[0].size + gone.blobs[2].size;

      if (kind !== 'inmemory') {
        // writable: collected as beside live registries (online collection's protocol), where
        // nothing used within storage.maintenance.gc.delay goes
        const live = await store.collect([], { readOnly: false });
        assert.equal(live.code, 0, live.stderr);
        assert.match(live.stderr, /not read-only, so registries may be using this storage/);
        assert.match(live.stdout, /: 0 blobs \(0 bytes\) to the trash/);
        for (const digest of own) assert.notEqual(await store.stored(digest), undefined, 'nothing younger than the delay goes');
      }

      const dry = await store.collect(['--dry-run'], { readOnly: false });
      assert.equal(dry.code, 0, dry.stderr);
      for (const digest of own) assert.match(dry.stdout, new RegExp(`blob eligible for deletion: ${digest}`));
      assert.deepEqual(summaryOf(dry), { manifests: 0, blobs: 3, bytes: ownBytes });
      for (const digest of [...own, ...digestsOf(kept)]) assert.notEqual(await store.stored(digest), undefined, `dry run kept ${digest}`);
      assert.ok(await store.exists(layout.layerLink(name, gone.blobs[2].digest as Digest)));

      const run = await store.collect([]);
      assert.equal(run.code, 0, run.stderr);
      assert.deepEqual(summaryOf(run), { manifests: 0, blobs: 3, bytes: ownBytes });
      for (const digest of own) assert.equal(await store.stored(digest), undefined, `${digest} freed`);
      for (const digest of digestsOf(kept)) assert.notEqual(await store.stored(digest), undefined, `${digest} kept`);
      assert.equal(await store.exists(layout.layerLink(name, gone.blobs[2].digest as Digest)), false, 'the unique layer link goes');
      assert.equal(await store.exists(layout.layerLink(name, gone.blobs[0].digest as Digest)), false, 'the config link goes');
      assert.ok(await store.exists(layout.layerLink(name, kept.blobs[1].digest as Digest)), 'the shared layer link stays');
      await assertServed(url, name, kept, 'kept');
      keep(name, kept, 'kept');

      const again = await store.collect(['--quiet']);
      assert.equal(again.stdout.trim().split('\n').length, 1, 'quiet: the summary line only');
      assert.deepEqual(summaryOf(again), { manifests: 0, blobs: 0, bytes: 0 });
    });

    it('a layer shared with another repository stays when its image is deleted in one', async () => {
      const image = buildImage('oci-manifest');
      await pushImageOK(url, 'gc/one', image, 'v1');
      await pushImageOK(url, 'gc/two', image, 'v1');
      await deleteManifest(url, 'gc/one', image.digest);
      const run = await store.collect(['--delete-untagged']);
      assert.equal(run.code, 0, run.stderr);
      for (const digest of digestsOf(image)) assert.notEqual(await store.stored(digest), undefined);
      await assertServed(url, 'gc/two', image, 'v1');
      keep('gc/two', image, 'v1');
      assert.equal(await store.exists(layout.layerLink('gc/one', image.blobs[1].digest as Digest)), false, 'gc/one no longer uses it');
    });

    it('--delete-untagged removes untagged manifests and keeps the untagged children of a tagged index (distribution/distribution#3178)', async () => {
      const name = 'gc/untagged';
      const index = buildImage('oci-index');
      for (const child of index.children) await pushImageOK(url, name, child); // by digest: untagged
      await pushImageOK(url, name, index, 'multi');
      const list = await pushImageOK(url, name, buildImage('docker-list'), 'list');
      const untagged = await pushImageOK(url, name, buildImage('docker-v2'));
      const retagged = await pushImageOK(url, name, buildImage('oci-manifest'), 'moving');
      const current = await pushImageOK(url, name, buildImage('oci-manifest'), 'moving');
      const dropped = [untagged, retagged];

      const dry = await store.collect(['--dry-run', '--delete-untagged']);
      assert.equal(summaryOf(dry).manifests, 2);
      for (const image of dropped) assert.equal(await manifestStatus(url, name, image.digest), 200, 'the dry run deletes no manifest');

      const run = await store.collect(['--delete-untagged']);
      assert.equal(run.code, 0, run.stderr);
      assert.equal(summaryOf(run).manifests, 2);
      for (const image of dropped) {
        assert.equal(await manifestStatus(url, name, image.digest), 404, `${image.digest} deleted`);
        for (const digest of digestsOf(image)) assert.equal(await store.stored(digest), undefined, `${digest} freed`);
        assert.equal(await store.exists(layout.manifestRevisionDir(name, image.digest as Digest)), false, 'revision and berth.json gone');
      }
      assert.equal(await store.exists(layout.tagIndexLink(name, 'moving', retagged.digest as Digest)), false, "the tag's history entry goes");
      await assertServed(url, name, index, 'multi');
      await assertServed(url, name, list, 'list');
      await assertServed(url, name, current, 'moving');
      keep(name, index, 'multi');
      keep(name, list, 'list');
      keep(name, current, 'moving');
      for (const image of [index, list, current]) for (const digest of digestsOf(image)) assert.notEqual(await store.stored(digest), undefined);
    });

    it('sha512 content: kept when a kept manifest references it, freed (blob, layer link, revision, referrers entry) when not', async () => {
      const name = 'gc/sha512';
      // a tagged index (a tag names a sha256 digest) of children pushed by their sha512 digests, and a sha512 referrer of a child
      const index = buildImage('oci-index', { children: [buildImage('oci-manifest', { algorithm: 'sha512' }), buildImage('oci-manifest', { algorithm: 'sha512' })] });
      for (const child of index.children) await pushImageOK(url, name, child);
      await pushImageOK(url, name, index, 'multi');
      const sbom = await pushImageOK(url, name, buildImage('oci-artifact', { subject: index.children[0], algorithm: 'sha512' }));
      // untagged and pushed by its sha512 digest: goes with --delete-untagged, with its referrer
      const untagged = await pushImageOK(url, name, buildImage('oci-manifest', { algorithm: 'sha512' }));
      const signature = await pushImageOK(url, name, buildImage('oci-artifact', { subject: untagged, algorithm: 'sha512' }));
      // deleted through the API: its own sha512 blobs go at the next collection
      const deleted = await pushImageOK(url, name, buildImage('docker-v2', { algorithm: 'sha512' }));
      await deleteManifest(url, name, deleted.digest);

      const run = await store.collect(['--delete-untagged']);
      assert.equal(run.code, 0, run.stderr);
      const keptDigests = new Set([index, sbom].flatMap(digestsOf));
      for (const digest of keptDigests) assert.notEqual(await store.stored(digest), undefined, `${digest} kept`);
      for (const image of [untagged, signature, deleted]) {
        // the artifacts share the empty config `{}` with the kept SBOM
        for (const digest of digestsOf(image).filter((d) => !keptDigests.has(d))) assert.equal(await store.stored(digest), undefined, `${digest} freed`);
        assert.equal(await store.exists(layout.layerLink(name, image.blobs[1].digest as Digest)), false, 'its layer link goes');
      }
      assert.equal(await store.exists(layout.manifestRevisionDir(name, untagged.digest as Digest)), false, 'the sha512 revision goes');
      assert.equal(await store.exists(layout.referrersDir(name, untagged.digest as Digest)), false, "the sha512 subject's referrers index goes");
      assert.ok(await store.exists(layout.referrerDescriptor(name, index.children[0].digest as Digest, sbom.digest as Digest)));
      await assertServed(url, name, index, 'multi');
      await assertServed(url, name, sbom);
      keep(name, index, 'multi');
      keep(name, sbom);
    });

    it('--delete-untagged keeps a referrer whose subject is kept and deletes one whose subject goes', async () => {
      const name = 'gc/referrers';
      const subject = await pushImageOK(url, name, buildImage('oci-manifest'), 'app');
      const sbom = await pushImageOK(url, name, buildImage('oci-artifact', { subject }));
      const doomed = await pushImageOK(url, name, buildImage('oci-manifest'));
      const signature = await pushImageOK(url, name, buildImage('oci-artifact', { subject: doomed, artifactType: 'application/vnd.example.signature.v1' }));
      // a tagged subject deleted through the API: its referrer no longer hangs on anything
      const deleted = await pushImageOK(url, name, buildImage('oci-manifest'), 'old');
      const orphan = await pushImageOK(url, name, buildImage('oci-artifact', { subject: deleted, artifactType: 'application/vnd.example.sbom.v1' }));
      await deleteManifest(url, name, deleted.digest);

      const plain = await store.collect([]);
      assert.equal(plain.code, 0, plain.stderr);
      assert.equal(await manifestStatus(url, name, orphan.digest), 200, 'without --delete-untagged every stored manifest stays');

      const run = await store.collect(['--delete-untagged']);
      assert.equal(run.code, 0, run.stderr);
      assert.equal(summaryOf(run).manifests, 3);
      await assertServed(url, name, subject, 'app');
      await assertServed(url, name, sbom);
      keep(name, subject, 'app');
      keep(name, sbom);
      const referrers = (await (await fetch(`${url}/v2/${name}/referrers/${subject.digest}`)).json()) as { manifests: { digest: string }[] };
      assert.deepEqual(referrers.manifests.map((m) => m.digest), [sbom.digest]);
      for (const image of [doomed, signature, orphan]) assert.equal(await manifestStatus(url, name, image.digest), 404);
      assert.equal(await store.stored(orphan.blobs[1].digest), undefined, "the deleted subject's referrer's layer is freed");
      assert.equal(await store.exists(layout.referrersDir(name, deleted.digest as Digest)), false);
      assert.equal(await store.stored(signature.digest), undefined);
      assert.equal(await store.stored(signature.blobs[1].digest), undefined, "the signature's layer is freed");
      assert.notEqual(await store.stored(signature.blobs[0].digest), undefined, 'the empty config, shared with the SBOM, stays');
      assert.equal(await store.exists(layout.referrersDir(name, doomed.digest as Digest)), false, "berth's referrers index of the deleted subject goes");
      assert.ok(await store.exists(layout.referrerDescriptor(name, subject.digest as Digest, sbom.digest as Digest)));
    });

    it('keeps the bytes of a signed first-generation manifest as pushed', async () => {
      const name = 'gc/schema1';
      const image = await pushImageOK(url, name, buildImage('schema1', { name, tag: 'v1' }), 'v1');
      const run = await store.collect(['--delete-untagged']);
      assert.equal(run.code, 0, run.stderr);
      await assertServed(url, name, image, 'v1');
      keep(name, image, 'v1');
    });

    it('leaves uploads in progress alone', async () => {
      const name = 'gc/uploading';
      const start = await fetch(`${url}/v2/${name}/blobs/uploads/`, { method: 'POST' });
      assert.equal(start.status, 202);
      const location = new URL(start.headers.get('location')!, url);
      const patched = await fetch(location, { method: 'PATCH', body: Buffer.from('half a layer'), headers: { 'content-type': 'application/octet-stream' } });
      assert.equal(patched.status, 202);
      const run = await store.collect(['--delete-untagged']);
      assert.equal(run.code, 0, run.stderr);
      const status = await fetch(new URL(patched.headers.get('location')!, url));
      assert.equal(status.status, 204, 'the upload goes on');
      assert.equal(status.headers.get('range'), '0-11');
    });

    it('a fresh berth on the collected storage serves every kept image byte for byte, by tag and by digest', { skip: kind === 'inmemory' && 'in-memory storage ends with its registry' }, async () => {
      assert.equal(kept.length, 10, 'the cases above ran');
      const fresh = await startBerth({}, { driver: kind, root: store.berth.root, s3: store.berth.s3 });
      try {
        for (const { name, image, tag } of kept) {
          await assertServed(fresh.url, name, image, tag ?? image.digest);
          await assertServed(fresh.url, name, image);
        }
      } finally {
        await fresh.stop();
      }
    });
  });
}
