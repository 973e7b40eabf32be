/**
 * What a repository is, on the in-memory and the filesystem driver alike: a repository outlives its
 * last manifest (docs/decisions.md, "A repository outlives its last manifest").
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { BlobStore } from '../../src/registry/blobs.js';
import { Catalog } from '../../src/registry/catalog.js';
import { sha256 } from '../../src/registry/digest.js';
import { RegistryError } from '../../src/registry/errors.js';
import * as layout from '../../src/registry/layout.js';
import { ManifestStore } from '../../src/registry/manifest-store.js';
import { isRepository } from '../../src/registry/repositories.js';
import { TagStore } from '../../src/registry/tags.js';
import type { StorageDriver } from '../../src/storage/driver.js';
import { FilesystemDriver } from '../../src/storage/filesystem.js';
import { InMemoryDriver } from '../../src/storage/inmemory.js';

const roots: string[] = [];
after(() => Promise.all(roots.map((root) => rm(root, { recursive: true, force: true }))));

const drivers: [string, () => Promise<StorageDriver>][] = [
  ['inmemory', async () => new InMemoryDriver()],
  [
    'filesystem',
    async () => {
      const root = await mkdtemp(join(tmpdir(), 'berth-repositories-'));
      roots.push(root);
      return new FilesystemDriver({ rootdirectory: root });
    },
  ],
];

for (const [driverName, make] of drivers) {
  describe(`repositories (${driverName})`, () => {
    it('a repository outlives its last manifest: known, in the catalog, no tags, MANIFEST_UNKNOWN', async () => {
      const driver = await make();
      const blobs = new BlobStore(driver);
      const tags = new TagStore(driver);
      const manifests = new ManifestStore(driver, blobs, tags, {});
      const config = Buffer.from('{}');
      await driver.putContent(layout.blobData(sha256(config)), config);
      await blobs.link('lib/app', sha256(config));
      const body = Buffer.from(
        JSON.stringify({ schemaVersion: 2, mediaType: 'application/vnd.oci.image.manifest.v1+json', config: { mediaType: 'application/vnd.oci.image.config.v1+json', digest: sha256(config), size: config.length }, layers: [] }),
      );
      assert.equal(await isRepository(driver, 'lib/app'), false, 'blobs alone make no repository');
      await manifests.put('lib/app', { tag: 'only' }, undefined, body);
      await manifests.delete('lib/app', sha256(body));

      assert.equal(await isRepository(driver, 'lib/app'), true);
      assert.deepEqual((await new Catalog(driver).page({ n: 10 })).repositories, ['lib/app']);
      assert.deepEqual(await tags.list('lib/app'), []);
      await assert.rejects(manifests.get('lib/app', { tag: 'only' }), (err) => err instanceof RegistryError && err.code === 'MANIFEST_UNKNOWN');
      await assert.rejects(manifests.get('lib/app', { digest: sha256(body) }), (err) => err instanceof RegistryError && err.code === 'MANIFEST_UNKNOWN');
    });
  });
}
