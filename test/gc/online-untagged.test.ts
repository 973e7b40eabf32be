/**
 * Online deletion of untagged manifests (storage.maintenance.gc.deleteuntagged): what goes (old
 * manifests no tag reaches, a referrer of such a one, the blobs only they held) and what stays
 * (tagged images, the untagged children of a tagged index, referrers of kept subjects, young
 * manifests and what they reach), the protocol that brings back a revision a PUT relied on while
 * it went, and a race of collections against index pushes that reuse old untagged children, on
 * the filesystem and on S3 (Ceph).
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import type { Digest } from '../../src/registry/digest.js';
import { collectOnline } from '../../src/registry/gc/online.js';
import { TouchingGuard } from '../../src/registry/gc/touch.js';
import * as layout from '../../src/registry/layout.js';
import { unlessMissing, type StorageDriver } from '../../src/storage/driver.js';
import { ForwardingDriver } from '../../src/storage/forwarding.js';
import { stopSharedCeph } from '../helpers/ceph.js';
import { berthFor, delays, servedWhole } from './online-harness.js';
import { buildImage, pushImageOK, putManifest, type Image } from '../helpers/images.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function manifestStatus(url: string, name: string, image: Image): Promise<number> {
  const res = await fetch(`${url}/v2/${name}/manifests/${image.digest}`, { method: 'HEAD', headers: { accept: image.mediaType } });
  return res.status;
}

async function storedBlob(driver: StorageDriver, digest: string): Promise<boolean> {
  return (await unlessMissing(driver.stat(layout.blobData(digest as Digest)))) !== undefined;
}

for (const driver of ['filesystem', 's3'] as const) {
  describe(`online deletion of untagged manifests (${driver})`, () => {
    const { DELAY_MS, AGED_MS } = delays(driver);
    const CONFIG = { storage: { maintenance: { gc: { enabled: true, delay: `${DELAY_MS}ms`, deleteuntagged: true } } } };
    // The collections here spare what is younger than a minute on the store's clock (what `age`
    // moves), so no loaded machine takes longer from a push to the collection that must spare it (the
    // configured 1 s was crossed at load 25). The configured delay sets only the registry's quiet time
    // between two records of one use (delay / 4), which `age` waits out for real: it stays short.
    const YOUNG_MS = 60_000;
    const OLD_MS = YOUNG_MS + AGED_MS - DELAY_MS;
    const collect = (d: StorageDriver, dryRun = false) => collectOnline(d, { delayMs: YOUNG_MS, dryRun, deleteUntagged: true });
    after(() => (driver === 's3' ? stopSharedCeph() : undefined));

    const withBerth = berthFor(CONFIG, driver);

    it('deletes old manifests no tag reaches and the blobs only they held; keeps tagged images, their children and referrers, and young manifests', async () => {
      await withBerth(async ({ url, app, age }) => {
        const index = await pushImageOK(url, 'app/x', buildImage('oci-index'), 'v1'); // children pushed by digest only
        const first = await pushImageOK(url, 'app/x', buildImage('docker-v2'), 'moving');
        const second = buildImage('docker-v2');
        const untagged = await pushImageOK(url, 'app/x', buildImage('oci-manifest'));
        const keptSbom = await pushImageOK(url, 'app/x', buildImage('oci-artifact', { subject: index }));
        const goneSbom = await pushImageOK(url, 'app/x', buildImage('oci-artifact', { subject: untagged }));
        await age(OLD_MS);
        await pushImageOK(url, 'app/x', second, 'moving'); // `first` is untagged from now on
        const young = await pushImageOK(url, 'app/x', buildImage('oci-manifest'));

        const dry = await collect(app.driver, true);
        assert.equal(dry.manifestsDeleted, 3, 'first, untagged and its referrer would go');
        assert.equal(await manifestStatus(url, 'app/x', untagged), 200, 'a dry run deletes nothing');

        const summary = await collect(app.driver);
        assert.equal(summary.manifestsDeleted, 3);
        assert.equal(summary.manifestsRestored, 0);
        for (const gone of [first, untagged, goneSbom]) assert.equal(await manifestStatus(url, 'app/x', gone), 404, gone.kind);
        for (const kept of [index, second, keptSbom, young]) assert.equal(await servedWhole(url, 'app/x', kept), undefined, kept.kind);
        // the untagged one's layers went to the trash; the moved tag's image shares nothing
        for (const blob of untagged.blobs.filter((b) => b.size > 2)) assert.equal(await storedBlob(app.driver, blob.digest), false, blob.digest);
        const referrers = (await (await fetch(`${url}/v2/app/x/referrers/${untagged.digest}`)).json()) as { manifests: unknown[] };
        assert.deepEqual(referrers.manifests, [], 'the deleted referrer left the index');
        const kept = (await (await fetch(`${url}/v2/app/x/referrers/${index.digest}`)).json()) as { manifests: { digest: string }[] };
        assert.deepEqual(kept.manifests.map((m) => m.digest), [keptSbom.digest]);
      });
    });

    it('a young untagged index keeps its old untagged children', async () => {
      await withBerth(async ({ url, app, age }) => {
        const children = [buildImage('oci-manifest'), buildImage('oci-manifest')];
        for (const child of children) await pushImageOK(url, 'app/y', child);
        await age(OLD_MS);
        const index = await pushImageOK(url, 'app/y', buildImage('oci-index', { children }));
        const summary = await collect(app.driver);
        assert.equal(summary.manifestsDeleted, 0);
        assert.equal(await servedWhole(url, 'app/y', index), undefined);
      });
    });

    it('a PUT that records the use of a revision while the collector deletes it brings it back (the protocol, interleaved by hand)', async () => {
      await withBerth(async ({ url, app, age }) => {
        const child = await pushImageOK(url, 'team/race', buildImage('oci-manifest'));
        await age(OLD_MS);
        const writer = new TouchingGuard(app.driver, 0);
        // an index PUT records its use of the child right after the collector removed the revision
        const interleaving = new (class extends ForwardingDriver {
          override async delete(path: string): Promise<void> {
            await super.delete(path);
            if (path === layout.manifestRevisionDir('team/race', child.digest as Digest)) await writer.touch([child.digest]);
          }
        })(app.driver);
        const summary = await collect(interleaving);
        assert.equal(summary.manifestsDeleted, 0);
        assert.equal(summary.manifestsRestored, 1);
        const index = buildImage('oci-index', { children: [child] });
        assert.equal((await putManifest(url, 'team/race', 'v1', index.body, index.mediaType)).status, 201);
        assert.equal(await servedWhole(url, 'team/race', index), undefined);
      });
    });

    it('races collections against index pushes that reuse old untagged children: every acknowledged index stays whole', async () => {
      await withBerth(async ({ url, app, age }) => {
        const rounds = driver === 's3' ? 3 : 8;
        const acknowledged: { name: string; index: Image }[] = [];
        let puts = 0;
        let refused = 0;
        let deleted = 0;
        let restored = 0;
        for (let round = 0; round < rounds; round++) {
          const name = `race/r${round}`;
          const children = Array.from({ length: 8 }, () => buildImage('oci-manifest', { layers: 1, layerSize: 256 }));
          for (const child of children) await pushImageOK(url, name, child);
          await age(OLD_MS); // every child is now old and untagged; the last two stay unused
          const collector = (async () => {
            for (let i = 0; i < 2; i++) {
              const s = await collect(app.driver);
              deleted += s.manifestsDeleted;
              restored += s.manifestsRestored;
            }
          })();
          const pushers = [0, 1, 2].map(async (i) => {
            await sleep(i * 10);
            const index = buildImage('oci-index', { children: children.slice(i * 2, i * 2 + 2) });
            puts++;
            const res = await putManifest(url, name, `t${i}`, index.body, index.mediaType);
            if (res.status === 201) acknowledged.push({ name, index });
            else refused++; // MANIFEST_UNKNOWN for a child already gone: a safe answer
          });
          await Promise.all([collector, ...pushers]);
          for (const { name: repo, index } of acknowledged) assert.equal(await servedWhole(url, repo, index), undefined, `round ${round}`);
        }
        console.log(`# untagged race (${driver}): ${rounds} rounds, ${puts} index PUTs, ${acknowledged.length} acknowledged and whole after every round, ${refused} refused safely, ${deleted} untagged manifests deleted, ${restored} restored`);
        assert.ok(deleted > 0, 'the collections deleted untagged children nobody reused');
        assert.ok(acknowledged.length > 0);
      });
    });
  });
}
