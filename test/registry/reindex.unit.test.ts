/**
 * reindexRepository (src/registry/indexing/reindex.ts), what retention, expiry and collection call
 * for a repository they changed: requests writing to it during every read leave it to the
 * reconciler, and the pass goes on (it failed the whole `berth garbage-collect` before).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RepositoryChangedError } from '../../src/metadata/metadata-index.js';
import type { RepositorySink } from '../../src/registry/indexing/sink.js';
import { reindexRepository } from '../../src/registry/indexing/reindex.js';
import * as layout from '../../src/registry/layout.js';
import { InMemoryDriver } from '../../src/storage/inmemory.js';

const DIGEST = `sha256:${'a'.repeat(64)}`;

describe('reindexRepository', () => {
  it('leaves a repository written to during every read to the reconciler instead of failing the pass', async () => {
    const driver = new InMemoryDriver();
    await driver.putContent(layout.layerLink('busy/app', DIGEST as never), Buffer.from(DIGEST));
    let replaced = 0;
    // the request path's count of writes moves before every replacement: each read is outdated
    const racing = {
      changesOf: async () => replaced,
      replaceRepository: async (facts: { name: string }) => {
        replaced++;
        throw new RepositoryChangedError(facts.name);
      },
      dropRepository: async () => false,
    } as unknown as RepositorySink;
    assert.equal(await reindexRepository(driver, racing, 'busy/app'), 'left');
    assert.equal(replaced, 3);
  });

  it('still fails on any other error of the index', async () => {
    const driver = new InMemoryDriver();
    await driver.putContent(layout.layerLink('broken/app', DIGEST as never), Buffer.from(DIGEST));
    const broken = {
      changesOf: async () => 0,
      replaceRepository: async () => {
        throw new Error('disk full');
      },
      dropRepository: async () => false,
    } as unknown as RepositorySink;
    await assert.rejects(reindexRepository(driver, broken, 'broken/app'), /disk full/);
  });
});
