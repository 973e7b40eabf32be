/**
 * The metadata cache (directory-cache.ts and the manifest content cache): two instances (each its
 * own stores and caches) on one storage. Repeated reads cost no file read; a push, a tag move and a
 * delete through the other instance (or written straight into the storage, as Distribution or
 * garbage collection would) are never answered from the cache.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { BlobStore } from '../../src/registry/blobs.js';
import { sha256, type Digest } from '../../src/registry/digest.js';
import { DirectoryCache } from '../../src/registry/cache/directory-cache.js';
import { RegistryError } from '../../src/registry/errors.js';
import * as layout from '../../src/registry/layout.js';
import { ManifestStore } from '../../src/registry/manifest-store.js';
import { TagStore } from '../../src/registry/tags.js';
import type { StorageDriver } from '../../src/storage/driver.js';
import { FilesystemDriver } from '../../src/storage/filesystem.js';
import { InMemoryDriver } from '../../src/storage/inmemory.js';

const OCI_MANIFEST = 'application/vnd.oci.image.manifest.v1+json';
const NAME = 'lib/app';
/** the filesystem driver's childrenVersion margin in these tests (2 s by default) */
const SETTLE_MS = 100;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** the driver, counting the calls that read a file */
function counting(driver: StorageDriver): { driver: StorageDriver; reads: () => number } {
  let reads = 0;
  const counted = new Proxy(driver, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        if (prop === 'getContent' || prop === 'reader') reads++;
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { driver: counted, reads: () => reads };
}

interface Instance {
  driver: StorageDriver;
  reads: () => number;
  blobs: BlobStore;
  tags: TagStore;
  manifests: ManifestStore;
}

function instance(storage: StorageDriver): Instance {
  const { driver, reads } = counting(storage);
  const links = new DirectoryCache(driver);
  const blobs = new BlobStore(driver, undefined, { links });
  const tags = new TagStore(driver, { links });
  return { driver, reads, blobs, tags, manifests: new ManifestStore(driver, blobs, tags, { revisions: links }) };
}

const setups: [string, () => Promise<{ a: StorageDriver; b: StorageDriver; settle: () => Promise<void>; cleanup: () => Promise<void> }>][] = [
  [
    'inmemory',
    async () => {
      const driver = new InMemoryDriver();
      return { a: driver, b: driver, settle: async () => undefined, cleanup: async () => undefined };
    },
  ],
  [
    'filesystem',
    async () => {
      const root = await mkdtemp(join(tmpdir(), 'berth-metacache-'));
      return {
        a: new FilesystemDriver({ rootdirectory: root, settleMs: SETTLE_MS }),
        b: new FilesystemDriver({ rootdirectory: root, settleMs: SETTLE_MS }),
        settle: () => sleep(SETTLE_MS + 50),
        cleanup: () => rm(root, { recursive: true, force: true }),
      };
    },
  ],
];

function isUnknown(code: string) {
  return (err: unknown) => err instanceof RegistryError && err.code === code;
}

for (const [driverName, setup] of setups) {
  describe(`metadata cache, two instances on one storage (${driverName})`, () => {
    let a: Instance;
    let b: Instance;
    let settle: () => Promise<void>;
    let cleanup: () => Promise<void>;
    let seq = 0;

    beforeEach(async () => {
      const made = await setup();
      ({ settle, cleanup } = made);
      a = instance(made.a);
      b = instance(made.b);
    });
    afterEach(() => cleanup());

    /** an OCI image pushed through `via`, its config and layer uploaded and linked first */
    async function push(via: Instance, reference: string): Promise<{ body: Buffer; digest: Digest; layer: Digest; layerSize: number }> {
      const n = ++seq;
      const store = async (content: string) => {
        const bytes = Buffer.from(content);
        const digest = sha256(bytes);
        await via.driver.putContent(layout.blobData(digest), bytes);
        await via.blobs.link(NAME, digest);
        return { digest, size: bytes.length };
      };
      const config = { mediaType: 'application/vnd.oci.image.config.v1+json', ...(await store(`config ${n}`)) };
      const layer = { mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip', ...(await store(`layer ${n}`)) };
      const body = Buffer.from(JSON.stringify({ schemaVersion: 2, mediaType: OCI_MANIFEST, config, layers: [layer] }));
      const ref = reference.startsWith('sha256:') ? { digest: reference as Digest } : { tag: reference };
      const parsed = await via.manifests.put(NAME, ref, OCI_MANIFEST, body);
      return { body, digest: parsed.digest, layer: layer.digest, layerSize: layer.size };
    }

    it('a manifest by tag and by digest, and a blob HEAD, read no file once cached', async () => {
      const image = await push(a, 'latest');
      await settle();
      for (const reference of [{ tag: 'latest' }, { digest: image.digest }]) {
        assert.deepEqual(await b.manifests.get(NAME, reference), { digest: image.digest, mediaType: OCI_MANIFEST, content: image.body });
        const before = b.reads();
        for (let i = 0; i < 5; i++) assert.deepEqual((await b.manifests.get(NAME, reference)).content, image.body);
        assert.equal(b.reads(), before, `no file read for ${JSON.stringify(reference)} once cached`);
      }
      assert.deepEqual(await b.blobs.stat(NAME, image.layer), { digest: image.layer, size: image.layerSize });
      const before = b.reads();
      await b.blobs.stat(NAME, image.layer);
      assert.equal(b.reads(), before, 'no file read for a cached layer link');
    });

    it('a tag moved by the other instance is seen at once, and again once settled', async () => {
      const first = await push(a, 'latest');
      await settle();
      assert.equal((await b.manifests.get(NAME, { tag: 'latest' })).digest, first.digest);
      const second = await push(a, 'latest');
      assert.equal((await b.manifests.get(NAME, { tag: 'latest' })).digest, second.digest, 'right after the move');
      await settle();
      assert.equal((await b.manifests.get(NAME, { tag: 'latest' })).digest, second.digest, 'once settled');
      // moved back within the same second, by rewriting the link as another registry would
      await a.driver.putContent(layout.tagCurrentLink(NAME, 'latest'), Buffer.from(first.digest));
      assert.equal((await b.manifests.get(NAME, { tag: 'latest' })).digest, first.digest, 'moved back');
    });

    it('a manifest deleted by the other instance is MANIFEST_UNKNOWN at once, by digest and by tag; pushed again it is back', async () => {
      const image = await push(a, 'latest');
      await settle();
      await b.manifests.get(NAME, { tag: 'latest' });
      await b.manifests.get(NAME, { digest: image.digest });
      assert.equal(await b.manifests.hasRevision(NAME, image.digest), true);
      await a.manifests.delete(NAME, image.digest);
      await assert.rejects(b.manifests.get(NAME, { digest: image.digest }), isUnknown('MANIFEST_UNKNOWN'));
      await assert.rejects(b.manifests.get(NAME, { tag: 'latest' }), isUnknown('MANIFEST_UNKNOWN'));
      assert.equal(await b.manifests.hasRevision(NAME, image.digest), false);
      await settle();
      await a.manifests.put(NAME, { digest: image.digest }, OCI_MANIFEST, image.body);
      assert.deepEqual((await b.manifests.get(NAME, { digest: image.digest })).content, image.body, 'pushed again');
    });

    it('a revision removed straight from the storage (garbage collection, Distribution) is gone at once', async () => {
      const image = await push(a, 'first');
      await settle();
      await b.manifests.get(NAME, { digest: image.digest });
      await a.driver.delete(layout.manifestRevisionDir(NAME, image.digest));
      await assert.rejects(b.manifests.get(NAME, { digest: image.digest }), isUnknown('MANIFEST_UNKNOWN'));
    });

    it('a layer link deleted by the other instance is BLOB_UNKNOWN at once; linked again it is back', async () => {
      const image = await push(a, 'latest');
      await settle();
      await b.blobs.stat(NAME, image.layer);
      await a.blobs.unlink(NAME, image.layer);
      await assert.rejects(b.blobs.stat(NAME, image.layer), isUnknown('BLOB_UNKNOWN'));
      assert.equal(await b.blobs.isLinked(NAME, image.layer), false);
      await settle();
      await a.blobs.link(NAME, image.layer);
      assert.equal((await b.blobs.stat(NAME, image.layer)).digest, image.layer);
    });

    it("a blob's content removed from the storage (garbage collection) is BLOB_UNKNOWN at once though the link stays", async () => {
      const image = await push(a, 'latest');
      await settle();
      await b.blobs.stat(NAME, image.layer);
      await a.driver.delete(layout.blobDir(image.layer));
      await assert.rejects(b.blobs.stat(NAME, image.layer), isUnknown('BLOB_UNKNOWN'));
    });

    it('a tag deleted from the storage (retention, expiry) is MANIFEST_UNKNOWN at once', async () => {
      await push(a, 'v1');
      await settle();
      await b.manifests.get(NAME, { tag: 'v1' });
      await a.driver.delete(layout.tagDir(NAME, 'v1'));
      await assert.rejects(b.manifests.get(NAME, { tag: 'v1' }), isUnknown('MANIFEST_UNKNOWN'));
    });
  });
}

describe('DirectoryCache bounds', () => {
  it('keeps at most maxEntries entries, the least recently used going first', async () => {
    const { driver, reads } = counting(new InMemoryDriver());
    for (const d of ['a', 'b', 'c']) await driver.putContent(`/${d}/link`, Buffer.from(d));
    const cache = new DirectoryCache(driver, 2);
    const read = (d: string) => cache.read(`/${d}`, 'link', undefined, async () => (await driver.getContent(`/${d}/link`)).toString());
    assert.equal(await read('a'), 'a');
    assert.equal(await read('b'), 'b');
    assert.equal(await read('a'), 'a'); // used again: b is now the oldest
    assert.equal(await read('c'), 'c');
    assert.equal(cache.size, 2);
    const before = reads();
    assert.equal(await read('a'), 'a');
    assert.equal(reads(), before, 'a stayed');
    assert.equal(await read('b'), 'b');
    assert.equal(reads(), before + 1, 'b was dropped and read again');
  });
});
