/**
 * The rebuild keeps each repository's fingerprint (src/registry/indexing/fingerprint.ts), so the
 * reconciler's first pass after it reads no repository that did not change (on 100,000
 * repositories that pass re-read everything and slowed pushes from 27 to 173 ms), while one changed
 * after the rebuild is still read and repaired; a fingerprint of files changed within the settle
 * time is not kept, and a `_layers` link without content is still looked at.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { validateConfig } from '../../src/config/load.js';
import { openMetadataIndex } from '../../src/features/metadata.js';
import type { MetadataIndex } from '../../src/metadata/metadata-index.js';
import type { Digest } from '../../src/registry/digest.js';
import { rebuildIndex } from '../../src/registry/indexing/rebuild.js';
import { reconcileIndex } from '../../src/registry/indexing/reconcile.js';
import { verifyIndex } from '../../src/registry/indexing/verify-index.js';
import { blobData, layerLink } from '../../src/registry/layout.js';
import { FilesystemDriver } from '../../src/storage/filesystem.js';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { buildImage, pushImageOK } from '../helpers/images.js';

const REPOS = '/docker/registry/v2/repositories';

let dir: string;
const indexes: MetadataIndex[] = [];
const registries: TestRegistry[] = [];

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'berth-rebuild-fp-'));
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

/** the store's clock seen from later on: every file is older than the settle time */
const settled = () => Date.now() + 60_000;

/** a filesystem driver that counts the files read whole (manifests, links, berth.json) */
function countingDriver(root: string): { driver: FilesystemDriver; reads: () => number } {
  const driver = new FilesystemDriver({ rootdirectory: root, settleMs: 0 });
  let reads = 0;
  const getContent = driver.getContent.bind(driver);
  driver.getContent = (path) => {
    reads++;
    return getContent(path);
  };
  return { driver, reads: () => reads };
}

async function differences(driver: FilesystemDriver, index: MetadataIndex): Promise<string[]> {
  const lines: string[] = [];
  await verifyIndex(driver, index, (line) => lines.push(line));
  return lines;
}

/** three repositories written by a registry without the index */
async function filledRoot() {
  const registry = await startBerth({ metadata: { enabled: false } });
  registries.push(registry);
  const images = [buildImage('oci-manifest'), buildImage('docker-v2'), buildImage('oci-index')];
  await pushImageOK(registry.url, 'fp/a', images[0], 'v1');
  await pushImageOK(registry.url, 'fp/a', images[1], 'v2');
  await pushImageOK(registry.url, 'fp/b', images[1], 'latest');
  await pushImageOK(registry.url, 'fp/c', images[2], 'latest');
  return { root: registry.root!, images };
}

describe('the rebuild and the reconciler', () => {
  it("after a rebuild, the reconciler's pass reads no repository that did not change, and repairs one that did", async () => {
    const { root, images } = await filledRoot();
    const { driver, reads } = countingDriver(root);
    const index = await freshIndex(root);
    await rebuildIndex(driver, index, { storeNow: settled });
    assert.deepEqual(await differences(driver, index), []);

    const readBefore = reads();
    const first = await reconcileIndex(driver, index, { storeNow: settled });
    assert.deepEqual({ read: first.read, skipped: first.skipped, deferred: first.deferred }, { read: 0, skipped: 3, deferred: 0 });
    assert.equal(reads() - readBefore, 0, 'no file read whole');

    // Distribution moves a tag by rewriting its link in place
    await writeFile(join(root, `${REPOS}/fp/a/_manifests/tags/v1/current/link`), images[1].digest);
    const second = await reconcileIndex(driver, index, { storeNow: settled });
    assert.deepEqual({ read: second.read, skipped: second.skipped }, { read: 1, skipped: 2 });
    assert.equal((await index.readRepository('fp/a'))?.tags.find((t) => t.name === 'v1')?.digest, images[1].digest);
    assert.deepEqual(await differences(driver, index), []);
  });

  it('keeps no fingerprint of files changed within the settle time: the next pass reads them', async () => {
    const { root } = await filledRoot();
    const driver = new FilesystemDriver({ rootdirectory: root, settleMs: 0 });
    const index = await freshIndex(root);
    await rebuildIndex(driver, index); // the store's own clock: every file was just written
    const pass = await reconcileIndex(driver, index, { storeNow: settled });
    assert.deepEqual({ read: pass.read, skipped: pass.skipped }, { read: 3, skipped: 0 });
    assert.equal((await reconcileIndex(driver, index, { storeNow: settled })).skipped, 3);
  });

  it("remembers a `_layers` link without content: its content stored after the rebuild is seen at the reconciler's next pass", async () => {
    const root = await mkdtemp(join(dir, 'dangling-'));
    const driver = new FilesystemDriver({ rootdirectory: root, settleMs: 0 });
    const index = await freshIndex(root);
    const content = Buffer.from(`a layer ${Math.random()}`);
    const digest = `sha256:${createHash('sha256').update(content).digest('hex')}` as Digest;
    await driver.putContent(layerLink('dangling/app', digest), Buffer.from(digest));
    await rebuildIndex(driver, index, { storeNow: settled });
    assert.deepEqual((await index.readRepository('dangling/app'))?.blobs, []);
    assert.equal((await reconcileIndex(driver, index, { storeNow: settled })).skipped, 1);
    // another repository's push stores the content, which changes no directory of this one
    await driver.putContent(blobData(digest), content);
    assert.equal((await reconcileIndex(driver, index, { storeNow: settled })).read, 1);
    assert.deepEqual((await index.readRepository('dangling/app'))?.blobs, [{ digest, size: content.length }]);
  });
});
