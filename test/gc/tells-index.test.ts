/**
 * What the offline collection tells the metadata index, and what that costs (issue 31): each
 * manifest and `_layers` link it deletes, as the request path's deletes do, without reading the
 * repository from storage again; and `berth garbage-collect` on a root whose embedded index was
 * never created leaves it uncreated.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { DEFAULT_SQLITE_FILE, openMetadataIndex } from '../../src/features/metadata.js';
import { collectGarbage } from '../../src/registry/gc/index.js';
import type { StorageDriver } from '../../src/storage/driver.js';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { buildImage, pushImageOK } from '../helpers/images.js';
import { indexDifferences } from '../helpers/index-sync.js';
import { writeGcFixture } from '../helpers/gc-fixture.js';

const run = promisify(execFile);
const CLI = join(import.meta.dirname, '../../src/cli.ts');
const registries: TestRegistry[] = [];
const dirs: string[] = [];
after(async () => {
  for (const registry of registries) await registry.stop().catch(() => undefined);
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

/** the driver, counting the content reads */
function countingReads(driver: StorageDriver): { driver: StorageDriver; reads: () => number } {
  let reads = 0;
  const counting = new Proxy(driver, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver);
      if (key !== 'getContent' || typeof value !== 'function') return typeof value === 'function' ? value.bind(target) : value;
      return (...args: unknown[]) => {
        reads++;
        return value.apply(target, args);
      };
    },
  });
  return { driver: counting, reads: () => reads };
}

describe('offline collection and the metadata index', () => {
  it('tells the index what it deleted without reading the repositories again', async () => {
    const registry = await startBerth({ metadata: {} });
    registries.push(registry);
    for (let i = 0; i < 3; i++) {
      await pushImageOK(registry.url, `tell/r${i}`, buildImage('oci-manifest'), 'v1');
      await pushImageOK(registry.url, `tell/r${i}`, buildImage('docker-v2')); // untagged: deleted, with its links
    }
    const { driver, reads } = countingReads(registry.app.driver);
    const index = await openMetadataIndex(registry.app.config);
    try {
      const summary = await collectGarbage(driver, { dryRun: false, deleteUntagged: true, index });
      assert.equal(summary.manifestsDeleted, 3);
      assert.ok(summary.layerLinksDeleted >= 6, JSON.stringify(summary));
    } finally {
      await index.close();
    }
    // the collection's own reads: each repository's two manifests (a tag's and a revision's links are read as links); reading a repository again for the index read its manifests and configs a second time
    assert.ok(reads() <= 6 + 3 * 4, `${reads()} content reads`);
    assert.deepEqual(await indexDifferences(registry), []);
  });

  it('a repository left with nothing is read again, and leaves the index when storage has it no more', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'berth-gc-index-'));
    dirs.push(dir);
    const registry = await startBerth({ metadata: { sqlite: { path: join(dir, 'metadata.sqlite') } } }, { driver: 'inmemory' });
    registries.push(registry);
    await pushImageOK(registry.url, 'gone/app', buildImage('docker-v2')); // untagged: its manifest and links go, and so does the repository on an object store
    const index = await openMetadataIndex(registry.app.config);
    try {
      await collectGarbage(registry.app.driver, { dryRun: false, deleteUntagged: true, index });
    } finally {
      await index.close();
    }
    assert.deepEqual(await indexDifferences(registry), []);
  });

  it('`berth garbage-collect` does not create an embedded index that does not exist', async () => {
    const root = await mkdtemp(join(tmpdir(), 'berth-gc-noindex-'));
    dirs.push(root);
    await writeGcFixture(root, 2);
    const file = join(root, 'gc.yml');
    await writeFile(file, stringify({ version: '0.1', log: { level: 'error' }, storage: { filesystem: { rootdirectory: root }, maintenance: { readonly: { enabled: true } } } }));
    const { stdout } = await run(process.execPath, ['--import', 'tsx', CLI, 'garbage-collect', '--quiet', file]);
    assert.match(stdout, /deleted 0 manifests, 6 blobs/);
    assert.equal(existsSync(join(root, DEFAULT_SQLITE_FILE)), false);
  });
});
