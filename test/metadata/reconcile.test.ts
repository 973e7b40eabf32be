/**
 * The reconciler (src/registry/indexing/reconcile.ts) on the filesystem with SQLite: storage
 * written behind the index's back (a registry without the index, a crash between the storage
 * write and the index write, links rewritten in place as Distribution does) is made the index's
 * by one pass; a repository unchanged since its last read is skipped; a repository gone from
 * storage is dropped; and the pass runs on the registry's scheduler, every metadata.reconcile.interval.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { validateConfig } from '../../src/config/load.js';
import { openMetadataIndex } from '../../src/features/metadata.js';
import type { MetadataIndex } from '../../src/metadata/metadata-index.js';
import type { Digest } from '../../src/registry/digest.js';
import { FINGERPRINT_BATCH, FULL_PASS_MS, reconcileIndex, reconcileTask, type ReconcileSummary } from '../../src/registry/indexing/reconcile.js';
import { rebuildIndex } from '../../src/registry/indexing/rebuild.js';
import { blobData, layerLink } from '../../src/registry/layout.js';
import { verifyIndex } from '../../src/registry/indexing/verify-index.js';
import { FilesystemDriver } from '../../src/storage/filesystem.js';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { buildImage, pushImageOK } from '../helpers/images.js';
import { advanceUntil, ManualClock } from '../helpers/manual-clock.js';
import { crashedPush } from '../helpers/crashed-push.js';

const REPOS = '/docker/registry/v2/repositories';

let dir: string;
const indexes: MetadataIndex[] = [];
const registries: TestRegistry[] = [];

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'berth-reconcile-'));
});
after(async () => {
  for (const index of indexes) await index.close().catch(() => undefined);
  for (const registry of registries) await registry.stop().catch(() => undefined);
  await rm(dir, { recursive: true, force: true });
});

async function freshIndex(root: string): Promise<MetadataIndex> {
  const index = await openMetadataIndex(validateConfig({ version: '0.1', storage: { filesystem: { rootdirectory: root } }, metadata: { sqlite: { path: join(root, `index-${indexes.length}.sqlite`) } } }, 'test'));
  indexes.push(index);
  return index;
}

async function differences(driver: FilesystemDriver, index: MetadataIndex): Promise<string[]> {
  const lines: string[] = [];
  await verifyIndex(driver, index, (line) => lines.push(line));
  return lines;
}

/** the store's clock seen from later on: every file is older than the reconciler's settle time */
const settled = () => Date.now() + 60_000;

describe('the reconciler', () => {
  it('makes the index what storage holds in one pass, then skips what did not change and reads again what did', async () => {
    // written by a registry without the index: the index knows nothing of it
    const registry = await startBerth({});
    registries.push(registry);
    const root = registry.root!;
    const [a1, a2, b1] = [buildImage('oci-manifest'), buildImage('docker-v2'), buildImage('oci-index')];
    await pushImageOK(registry.url, 'team/a', a1, 'v1');
    await pushImageOK(registry.url, 'team/a', a2, 'v2');
    await pushImageOK(registry.url, 'team/b', b1, 'latest');
    const driver = new FilesystemDriver({ rootdirectory: root, settleMs: 0 });
    const index = await freshIndex(root);
    assert.equal((await differences(driver, index)).length, 2); // both repositories missing

    const first = await reconcileIndex(driver, index, { storeNow: settled });
    assert.deepEqual({ read: first.read, skipped: first.skipped, dropped: first.dropped }, { read: 2, skipped: 0, dropped: 0 });
    assert.deepEqual(await differences(driver, index), []);

    const second = await reconcileIndex(driver, index, { storeNow: settled });
    assert.deepEqual({ read: second.read, skipped: second.skipped }, { read: 0, skipped: 2 });

    // Distribution moves a tag by rewriting its link in place (same size, no new directory entry)
    await writeFile(join(root, `${REPOS}/team/a/_manifests/tags/v1/current/link`), a2.digest);
    const afterMove = await reconcileIndex(driver, index, { storeNow: settled });
    assert.deepEqual({ read: afterMove.read, skipped: afterMove.skipped }, { read: 1, skipped: 1 });
    assert.deepEqual(await differences(driver, index), []);
    assert.equal((await index.readRepository('team/a'))?.tags.find((t) => t.name === 'v1')?.digest, a2.digest);

    // a repository deleted from storage goes from the index
    await rm(join(root, `${REPOS}/team/b`), { recursive: true });
    const afterDelete = await reconcileIndex(driver, index, { storeNow: settled });
    assert.equal(afterDelete.dropped, 1);
    assert.deepEqual(await index.repositoryNames(), ['team/a']);
    assert.deepEqual(await differences(driver, index), []);
  });

  it('takes fingerprints in batches, rests between them, and counts a repository it cannot fingerprint as one failure', async () => {
    const root = await mkdtemp(join(dir, 'batches-'));
    const names = Array.from({ length: FINGERPRINT_BATCH + 6 }, (_, i) => `many/r${String(i).padStart(3, '0')}`);
    for (const name of names) {
      const hex = createHash('sha256').update(name).digest('hex');
      await mkdir(join(root, `${REPOS}/${name}/_layers/sha256/${hex}`), { recursive: true });
      await writeFile(join(root, `${REPOS}/${name}/_layers/sha256/${hex}/link`), `sha256:${hex}`);
    }
    // a tags directory the worker cannot stat (ELOOP): its whole batch's call fails
    await mkdir(join(root, `${REPOS}/many/r005/_manifests`), { recursive: true });
    await symlink(join(root, `${REPOS}/many/r005/_manifests/tags`), join(root, `${REPOS}/many/r005/_manifests/tags`));
    const driver = new FilesystemDriver({ rootdirectory: root, settleMs: 0 });
    const index = await freshIndex(root);
    const rests: number[] = [];
    const failed: string[] = [];
    const summary = await reconcileIndex(driver, index, { storeNow: settled, rest: async (ms) => void rests.push(ms), failed: (name) => failed.push(name) });
    await driver.close();
    assert.deepEqual({ repositories: summary.repositories, read: summary.read, failed: summary.failed }, { repositories: names.length, read: names.length - 1, failed: 1 });
    assert.deepEqual(failed, ['many/r005']);
    assert.equal(rests.length, 1); // between the two batches
    assert.ok(rests[0] >= 0);
  });

  it('reads a repository whose directories settle while it is read in one pass (its fingerprints taken the same way before and after)', async () => {
    const root = await mkdtemp(join(dir, 'settling-'));
    const hex = createHash('sha256').update('settling').digest('hex');
    await mkdir(join(root, `${REPOS}/settling/app/_layers/sha256/${hex}`), { recursive: true });
    await writeFile(join(root, `${REPOS}/settling/app/_layers/sha256/${hex}/link`), `sha256:${hex}`);
    // directories vouched for 150 ms after their last change; the read of the repository takes longer
    class SlowReads extends FilesystemDriver {
      override async readSmallFiles(paths: readonly string[]) {
        await new Promise((resolve) => setTimeout(resolve, 300));
        return super.readSmallFiles(paths);
      }
    }
    const driver = new SlowReads({ rootdirectory: root, settleMs: 150 });
    const index = await freshIndex(root);
    const summary = await reconcileIndex(driver, index, { storeNow: settled });
    const left = await differences(driver, index);
    await driver.close();
    assert.deepEqual({ read: summary.read, deferred: summary.deferred }, { read: 1, deferred: 0 });
    assert.deepEqual(left, []);
  });

  it('does not undo a write of the request path that lands between its read of storage and its write of the rows', async () => {
    const registry = await startBerth({ metadata: { enabled: false } });
    registries.push(registry);
    const root = registry.root!;
    const image = buildImage('oci-manifest');
    await pushImageOK(registry.url, 'race/app', image, 'v1');
    const driver = new FilesystemDriver({ rootdirectory: root, settleMs: 0 });
    const index = await freshIndex(root);
    // a push's index write (its storage write came after the pass read storage) just before the pass writes
    const racing = Object.create(index) as MetadataIndex;
    racing.replaceRepository = async (facts, hasManifests, expectChanges) => {
      await index.tagMoved('race/app', 'pushed-meanwhile', image.digest);
      return index.replaceRepository(facts, hasManifests, expectChanges);
    };
    const pass = await reconcileIndex(driver, racing, { storeNow: settled });
    assert.deepEqual({ read: pass.read, deferred: pass.deferred }, { read: 0, deferred: 1 });
    assert.deepEqual((await index.readRepository('race/app'))?.tags.map((t) => t.name), ['pushed-meanwhile'], "the request path's row stays");
    // the next pass reads the repository again
    const next = await reconcileIndex(driver, index, { storeNow: settled });
    assert.equal(next.read, 1);
  });

  it('without directory tokens (as on S3) fingerprints by a walk: skips what did not change, sees a tag rewritten in place', async () => {
    const registry = await startBerth({});
    registries.push(registry);
    const root = registry.root!;
    const [one, two] = [buildImage('oci-manifest'), buildImage('oci-manifest')];
    await pushImageOK(registry.url, 'walk/app', one, 'v1');
    await pushImageOK(registry.url, 'walk/app', two, 'v2');
    // a driver that never vouches for a directory, as S3's
    const driver = new FilesystemDriver({ rootdirectory: root, settleMs: Number.MAX_SAFE_INTEGER });
    const index = await freshIndex(root);
    assert.equal((await reconcileIndex(driver, index, { storeNow: settled })).read, 1);
    assert.equal((await reconcileIndex(driver, index, { storeNow: settled })).skipped, 1);
    await new Promise((resolve) => setTimeout(resolve, 20)); // a later mtime than the pass saw
    await writeFile(join(root, `${REPOS}/walk/app/_manifests/tags/v1/current/link`), two.digest);
    assert.equal((await reconcileIndex(driver, index, { storeNow: settled })).read, 1);
    assert.deepEqual(await differences(driver, index), []);
  });

  it('does not trust a fingerprint of files changed within the settle time: the next pass reads the repository again', async () => {
    const registry = await startBerth({});
    registries.push(registry);
    await pushImageOK(registry.url, 'fresh/app', buildImage('oci-manifest'), 'v1');
    const driver = new FilesystemDriver({ rootdirectory: registry.root!, settleMs: 0 });
    const index = await freshIndex(registry.root!);
    assert.equal((await reconcileIndex(driver, index)).read, 1); // the store's own clock: just written
    assert.equal((await reconcileIndex(driver, index)).read, 1);
    assert.equal((await reconcileIndex(driver, index, { storeNow: settled })).read, 1);
    assert.equal((await reconcileIndex(driver, index, { storeNow: settled })).skipped, 1);
  });

  it('repairs a crash between the storage write and the index write', async () => {
    const root = await mkdtemp(join(dir, 'crash-'));
    const driver = new FilesystemDriver({ rootdirectory: root, settleMs: 0 });
    const index = await freshIndex(root);
    // the process "dies" right after storage took the manifest: the index is never told
    const { image, tags } = await crashedPush(driver, index, 'crash/app', 'v1');
    // a second process finishes the push (the tag) and is killed before telling the index too
    await tags.tag('crash/app', 'v1', image.digest as Digest).catch(() => undefined);
    assert.notDeepEqual(await differences(driver, index), []);

    await reconcileIndex(driver, index);
    assert.deepEqual(await differences(driver, index), []);
    const rows = await index.readRepository('crash/app');
    assert.deepEqual(rows?.manifests.map((m) => m.digest), [image.digest]);
  });

  it("sees a link's content completed by another push at the next pass, though the repository's directories did not change", async () => {
    const root = await mkdtemp(join(dir, 'completed-'));
    const driver = new FilesystemDriver({ rootdirectory: root, settleMs: 0 });
    const index = await freshIndex(root);
    const content = Buffer.from(`a layer ${Math.random()}`);
    const digest = `sha256:${createHash('sha256').update(content).digest('hex')}` as Digest;
    // a push to dangling/app was cut after its link and before its content (a kill)
    await driver.putContent(layerLink('dangling/app', digest), Buffer.from(digest));
    assert.equal((await reconcileIndex(driver, index, { storeNow: settled })).read, 1);
    assert.deepEqual((await index.readRepository('dangling/app'))?.blobs, []);
    assert.equal((await reconcileIndex(driver, index, { storeNow: settled })).skipped, 1);
    // another repository's push stores the content
    await driver.putContent(blobData(digest), content);
    assert.equal((await reconcileIndex(driver, index, { storeNow: settled })).read, 1);
    assert.deepEqual((await index.readRepository('dangling/app'))?.blobs, [{ digest, size: content.length }]);
    assert.deepEqual(await differences(driver, index), []);
    assert.equal((await reconcileIndex(driver, index, { storeNow: settled })).skipped, 1);
  });

  it('spreads the hourly full pass over the passes of the hour, so a Distribution write made after that hour shows at the next pass', async () => {
    const root = await mkdtemp(join(dir, 'rounds-'));
    const link = async (name: string, text: string) => {
      const hex = createHash('sha256').update(text).digest('hex');
      await mkdir(join(root, `${REPOS}/${name}/_layers/sha256/${hex}`), { recursive: true });
      await writeFile(join(root, `${REPOS}/${name}/_layers/sha256/${hex}/link`), `sha256:${hex}`);
      const data = join(root, blobData(`sha256:${hex}` as Digest));
      await mkdir(join(data, '..'), { recursive: true });
      await writeFile(data, text);
    };
    const names = Array.from({ length: FINGERPRINT_BATCH + 6 }, (_, i) => `rounds/r${String(i).padStart(3, '0')}`);
    for (const name of names) await link(name, name);
    const clock = new ManualClock(Date.now());
    // reading a repository whole takes 10 s of the store's time, one read at a time (a slow disk): all of them, 700 s
    let reads = Promise.resolve();
    class SlowReads extends FilesystemDriver {
      override async readSmallFiles(paths: readonly string[]) {
        const turn = reads.then(() => clock.advance(10_000));
        reads = turn;
        await turn;
        return super.readSmallFiles(paths);
      }
    }
    const driver = new SlowReads({ rootdirectory: root, settleMs: 0 });
    const index = await freshIndex(root);
    await rebuildIndex(driver, index, { now: () => clock.now(), storeNow: settled });
    const interval = 10 * 60_000;
    const summaries: ReconcileSummary[] = [];
    const task = reconcileTask(driver, index, interval, clock, { info() {}, warn() {}, debug() {} }, (summary) => summaries.push(summary));
    const signal = new AbortController().signal;
    const longest = { ms: 0 };
    const pass = async () => {
      await clock.advance(interval);
      const started = clock.now();
      await task.run(signal);
      longest.ms = Math.max(longest.ms, clock.now() - started);
    };
    // the passes of the hour after the rebuild, up to the one an hour after it
    for (let i = 0; i < FULL_PASS_MS / interval; i++) await pass();
    // a layer linked by Distribution on the shared root after that pass
    await link('rounds/r050', 'pushed by Distribution');
    // checked through a driver of its own, whose reads take none of the store's time
    const plain = new FilesystemDriver({ rootdirectory: root });
    assert.equal((await differences(plain, index)).length, 1);
    await pass();
    const left = await differences(plain, index);
    await Promise.all([driver.close(), plain.close()]);
    assert.deepEqual(left, [], 'shown by the pass one interval later');
    assert.ok(longest.ms < interval, `the longest pass took ${longest.ms} ms of the store's time`);
    // every repository read whole once in the round the rebuild started, a share per pass (about
    // a sixth, as the round's time so far asks: the reads' own time counts too)
    const round = summaries.slice(0, summaries.findIndex((s) => s.share?.complete) + 1);
    assert.ok(round.length >= 5, JSON.stringify(round.map((s) => s.share!.read)));
    assert.equal(round.reduce((sum, s) => sum + s.share!.read, 0), names.length);
    assert.ok(round.every((s) => s.share!.read < names.length / 3), JSON.stringify(round.map((s) => s.share!.read)));
  });

  it('runs on the scheduler every metadata.reconcile.interval, by one instance', async () => {
    const clock = new ManualClock(Date.now());
    const registry = await startBerth({ metadata: { reconcile: { interval: '30s' } } }, { clock });
    registries.push(registry);
    const root = registry.root!;
    // a repository written straight into storage, as Distribution would
    const writer = await startBerth({ metadata: { enabled: false } }, { root });
    registries.push(writer);
    const image = await pushImageOK(writer.url, 'behind/back', buildImage('oci-manifest'), 'v1');
    const index = await openMetadataIndex(registry.app.config);
    indexes.push(index);
    assert.equal(await index.readRepository('behind/back'), undefined);
    await advanceUntil(clock, 'the reconciler indexed the repository', async () => (await index.readRepository('behind/back'))?.tags[0]?.digest === image.digest, { step: 30_000 });
    assert.deepEqual(await differences(new FilesystemDriver({ rootdirectory: root }), index), []);
  });
});
