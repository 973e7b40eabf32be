/**
 * berth's collection on a root shared with Distribution (Debian's docker-registry 2.8.2), both
 * ways, on the filesystem (shared-root.test.ts) and on S3 (s3-shared-root.test.ts):
 * - after berth's collection, Distribution's `garbage-collect --dry-run` finds nothing more to
 *   delete, and with `--delete-untagged` only what berth keeps on purpose (the untagged children
 *   of a tagged index, distribution/distribution#3178, and a referrer of a tagged image, which
 *   Distribution 2.8 does not know);
 * - after Distribution's collection, berth serves every image it kept and finds nothing more;
 * - both registries serve every kept image byte for byte.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Overrides } from '../helpers/berth.js';
import { buildImage, pushImageOK, type Image } from '../helpers/images.js';
import { indexDifferences, reconcileNow } from '../helpers/index-sync.js';
import { REFERENCE_REGISTRY_BIN, startReferenceRegistry, type ReferenceRegistry } from '../helpers/reference-registry.js';
import { assertServed, manifestStatus, runCommand, startStore, summaryOf, type Store } from './harness.js';

/** Distribution's garbage-collect on its own configuration */
async function distributionCollect(ref: ReferenceRegistry, flags: string[]): Promise<{ marked: number; blobs: number; manifests: string[]; output: string }> {
  const result = await runCommand(REFERENCE_REGISTRY_BIN, ['garbage-collect', ...flags, ref.configPath]);
  assert.equal(result.code, 0, result.stdout + result.stderr);
  const counts = /(\d+) blobs marked, (\d+) blobs and (\d+) manifests eligible for deletion/.exec(result.stdout);
  assert.ok(counts, result.stdout);
  const manifests = [...result.stdout.matchAll(/^manifest eligible for deletion: (\S+)/gm)].map((m) => m[1]);
  assert.equal(manifests.length, Number(counts[3]));
  return { marked: Number(counts[1]), blobs: Number(counts[2]), manifests: manifests.sort(), output: result.stdout };
}

async function deleteManifest(base: string, name: string, digest: string): Promise<void> {
  const res = await fetch(`${base}/v2/${name}/manifests/${digest}`, { method: 'DELETE' });
  assert.equal(res.status, 202, `DELETE ${base} ${name}@${digest}`);
}

/** `storage`: the shared storage for Distribution's configuration and berth's */
export function describeSharedRoot(label: string, storage: () => Promise<{ kind: 'filesystem' | 's3'; ref: Overrides; berth: { root?: string; s3?: Overrides; metadata?: Overrides } }>, options: { skip?: string | false } = {}): void {
  describe(`garbage-collect on a root shared with Distribution (${label})`, { skip: options.skip ?? false }, () => {
    let ref: ReferenceRegistry;
    let store: Store;
    const kept: { name: string; image: Image; tag?: string }[] = [];

    before(async () => {
      const shared = await storage();
      ref = await startReferenceRegistry({ deleteEnabled: true, ...shared.ref });
      // with the metadata index on (the default block: SQLite in the root, or the file the storage names)
      store = await startStore(shared.kind, shared.berth.root === undefined && shared.kind === 'filesystem' ? { root: ref.rootdirectory, metadata: {} } : shared.berth);
    });
    after(async () => {
      await store?.stop();
      await ref?.stop();
    });

    /**
     * berth's index equals storage once its reconciler ran over what Distribution wrote (`berth
     * verify --index` finds nothing); `full` after Distribution's collection, which deletes blobs'
     * content under their links (no repository directory shows that: the reconciler's full pass reads it)
     */
    async function assertIndexed(full = false): Promise<void> {
      await reconcileNow(store.berth, { full });
      assert.deepEqual(await indexDifferences(store.berth), []);
    }

    async function assertAllServed(): Promise<void> {
      for (const base of [store.berth.url, ref.url]) {
        for (const { name, image, tag } of kept) {
          await assertServed(base, name, image, tag ?? image.digest);
          await assertServed(base, name, image);
        }
      }
    }

    it("berth collects; Distribution's dry run finds nothing more to delete", async () => {
      const name = 'gc/shared';
      const berthURL = store.berth.url;
      const fromBerth = await pushImageOK(berthURL, name, buildImage('docker-v2'), 'berth');
      const index = await pushImageOK(berthURL, name, buildImage('oci-index'), 'index');
      const sbom = await pushImageOK(berthURL, name, buildImage('oci-artifact', { subject: fromBerth }));
      const fromRef = await pushImageOK(ref.url, name, buildImage('docker-v2'), 'ref');
      const gone = [
        await pushImageOK(berthURL, name, buildImage('oci-manifest')), // untagged
        await pushImageOK(ref.url, name, buildImage('docker-v2')), // untagged, pushed through Distribution
      ];
      const deleted = [await pushImageOK(berthURL, name, buildImage('docker-v2'), 'del1'), await pushImageOK(ref.url, name, buildImage('docker-v2'), 'del2')];
      await deleteManifest(berthURL, name, deleted[0].digest);
      await deleteManifest(ref.url, name, deleted[1].digest);
      kept.push({ name, image: fromBerth, tag: 'berth' }, { name, image: index, tag: 'index' }, { name, image: sbom }, { name, image: fromRef, tag: 'ref' });

      const run = await store.collect(['--delete-untagged']);
      assert.equal(run.code, 0, run.stderr);
      assert.equal(summaryOf(run).manifests, 2);
      for (const image of gone) assert.equal(await manifestStatus(berthURL, name, image.digest), 404);
      for (const image of [...gone, ...deleted]) for (const blob of image.blobs) assert.equal(await store.stored(blob.digest), undefined);

      const plain = await distributionCollect(ref, ['--dry-run']);
      assert.equal(plain.blobs, 0, plain.output);
      assert.deepEqual(plain.manifests, []);
      // what Distribution would still delete is what berth keeps on purpose
      const untagged = await distributionCollect(ref, ['--dry-run', '--delete-untagged']);
      assert.deepEqual(untagged.manifests, [...index.children.map((c) => c.digest), sbom.digest].sort());
      await assertAllServed();
      await assertIndexed();
    });

    it("Distribution collects; berth serves what it kept and finds nothing more to delete", async () => {
      const name = 'gc/other';
      const fromBerth = await pushImageOK(store.berth.url, name, buildImage('oci-manifest'), 'berth');
      const fromRef = await pushImageOK(ref.url, name, buildImage('docker-v2'), 'ref');
      const deleted = [await pushImageOK(store.berth.url, name, buildImage('docker-v2'), 'del1'), await pushImageOK(ref.url, name, buildImage('docker-v2'), 'del2')];
      await deleteManifest(store.berth.url, name, deleted[0].digest);
      await deleteManifest(ref.url, name, deleted[1].digest);
      kept.push({ name, image: fromBerth, tag: 'berth' }, { name, image: fromRef, tag: 'ref' });

      const collected = await distributionCollect(ref, []);
      assert.ok(collected.blobs >= 6, collected.output); // the deleted images' manifests, configs and layers
      for (const image of deleted) for (const blob of image.blobs) assert.equal(await store.stored(blob.digest), undefined);
      await assertAllServed();

      const dry = await store.collect(['--dry-run']);
      assert.equal(dry.code, 0, dry.stderr);
      const { manifests, blobs } = summaryOf(dry);
      assert.deepEqual({ manifests, blobs }, { manifests: 0, blobs: 0 }, dry.stdout);
      await assertIndexed(true);
    });
  });
}
