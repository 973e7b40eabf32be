/**
 * The writers outside the request path tell the metadata index after storage (SQLite on the
 * filesystem): offline and online garbage collection, retention, the proxy's TTL expiry, upload
 * purging and the pull-through cache's fills. After each, `berth verify --index`'s comparison
 * finds nothing; before the writers told the index, each left a difference (upload purging
 * excepted: it changes nothing the index holds).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { openMetadataIndex } from '../../src/features/metadata.js';
import { collectGarbage } from '../../src/registry/gc/index.js';
import { collectOnline } from '../../src/registry/gc/online.js';
import { expireCache } from '../../src/registry/expiry/index.js';
import { purgeUploads } from '../../src/registry/purge.js';
import { applyRetention } from '../../src/registry/retention/index.js';
import { compilePolicies } from '../../src/registry/retention/policy.js';
import { startBerth, type Overrides, type TestRegistry } from '../helpers/berth.js';
import { pushBlob } from '../helpers/blobs.js';
import { buildImage, pushImageOK } from '../helpers/images.js';
import { indexDifferences } from '../helpers/index-sync.js';

const registries: TestRegistry[] = [];
after(async () => {
  for (const registry of registries) await registry.stop().catch(() => undefined);
});

async function start(overrides: Overrides = {}): Promise<TestRegistry> {
  const registry = await startBerth({ metadata: {}, ...overrides });
  registries.push(registry);
  return registry;
}

async function withIndex<T>(registry: TestRegistry, work: (index: Awaited<ReturnType<typeof openMetadataIndex>>) => Promise<T>): Promise<T> {
  const index = await openMetadataIndex(registry.app.config);
  try {
    return await work(index);
  } finally {
    await index.close();
  }
}

async function deleteManifest(registry: TestRegistry, name: string, digest: string): Promise<void> {
  assert.equal((await fetch(`${registry.url}/v2/${name}/manifests/${digest}`, { method: 'DELETE' })).status, 202);
}

const run = promisify(execFile);
const CLI = join(import.meta.dirname, '../../src/cli.ts');
const LATER = Date.now() + 365 * 86_400_000;

describe('the writers outside the request path keep the index equal to storage', () => {
  it('offline garbage collection (--delete-untagged): the untagged manifests and the links it deletes leave the index', async () => {
    const registry = await start();
    await pushImageOK(registry.url, 'gc/app', buildImage('oci-manifest'), 'v1');
    await pushImageOK(registry.url, 'gc/app', buildImage('docker-v2')); // untagged
    const summary = await withIndex(registry, (index) => collectGarbage(registry.app.driver, { dryRun: false, deleteUntagged: true, index }));
    assert.equal(summary.manifestsDeleted, 1);
    assert.deepEqual(await indexDifferences(registry), []);
  });

  it('`berth garbage-collect --delete-untagged` tells the index of the configuration', async () => {
    const registry = await start();
    await pushImageOK(registry.url, 'cli/app', buildImage('oci-manifest'), 'v1');
    await pushImageOK(registry.url, 'cli/app', buildImage('docker-v2')); // untagged
    const file = join(registry.root!, 'gc.yml');
    await writeFile(file, stringify({ version: '0.1', log: { level: 'error' }, storage: { filesystem: { rootdirectory: registry.root }, maintenance: { readonly: { enabled: true } } }, metadata: {} }));
    const { stdout } = await run(process.execPath, ['--import', 'tsx', CLI, 'garbage-collect', '--delete-untagged', '--quiet', file]);
    assert.match(stdout, /deleted 1 manifests/);
    assert.deepEqual(await indexDifferences(registry), []);
  });

  it('online garbage collection: untagged manifests deleted, blobs deleted from the trash under links that stay', async () => {
    const registry = await start();
    await pushImageOK(registry.url, 'online/app', buildImage('oci-manifest'), 'v1');
    await pushImageOK(registry.url, 'online/app', buildImage('docker-v2')); // untagged
    const deleted = await pushImageOK(registry.url, 'online/app', buildImage('docker-v2'), 'gone');
    await deleteManifest(registry, 'online/app', deleted.digest); // its layers' links stay, unreferenced
    const collect = () => withIndex(registry, (index) => collectOnline(registry.app.driver, { delayMs: -60_000, dryRun: false, deleteUntagged: true, index }));
    const first = await collect();
    assert.equal(first.manifestsDeleted, 1);
    assert.ok(first.blobsTrashed >= 3, JSON.stringify(first));
    assert.deepEqual(await indexDifferences(registry), []); // in the trash: still linked, as a request takes it back
    const second = await collect(); // empties the trash
    assert.ok(second.blobsPurged >= 3, JSON.stringify(second));
    assert.deepEqual(await indexDifferences(registry), []);
  });

  it('retention: the tags and untagged manifests a policy deletes leave the index', async () => {
    const registry = await start();
    await pushImageOK(registry.url, 'ret/app', buildImage('oci-manifest'), 'old');
    await pushImageOK(registry.url, 'ret/app', buildImage('oci-manifest'), 'keep');
    const policies = compilePolicies([{ repositories: ['ret/**'], keep: { tags: ['keep'] }, delete: { tagsolderthan: 1000, untaggedolderthan: 1000 } }]);
    const summary = await withIndex(registry, (index) => applyRetention(registry.app.driver, { policies, now: LATER, dryRun: false, index }));
    assert.deepEqual({ tags: summary.tagsDeleted, manifests: summary.manifestsDeleted }, { tags: 1, manifests: 1 });
    assert.deepEqual(await indexDifferences(registry), []);
  });

  it("the proxy's TTL expiry: expired manifests, their tags and links leave the index", async () => {
    const registry = await start();
    await pushImageOK(registry.url, 'cached/app', buildImage('oci-manifest'), 'v1');
    const summary = await withIndex(registry, (index) => expireCache(registry.app.driver, { ttlOf: () => 1000, now: LATER, index }));
    assert.equal(summary.manifestsExpired, 1);
    assert.deepEqual(await indexDifferences(registry), []);
  });

  it('upload purging: removes uploads only, which the index does not hold', async () => {
    const registry = await start();
    await pushImageOK(registry.url, 'purge/app', buildImage('oci-manifest'), 'v1');
    assert.equal((await fetch(`${registry.url}/v2/purge/app/blobs/uploads/`, { method: 'POST' })).status, 202);
    assert.equal((await fetch(`${registry.url}/v2/purge/only-upload/blobs/uploads/`, { method: 'POST' })).status, 202);
    assert.equal((await pushBlob(registry.url, 'purge/blobs', Buffer.from('a blob alone') as Buffer<ArrayBuffer>)).status, 201);
    const result = await purgeUploads(registry.app.driver, new Date(LATER), false);
    assert.equal(result.purged.length, 2);
    assert.deepEqual(await indexDifferences(registry), []);
  });

  it("the pull-through cache's fills: a manifest fetched before its configuration gets its platform and labels once the configuration is", async () => {
    const upstream = await startBerth();
    registries.push(upstream);
    const image = buildImage('docker-v2');
    await pushImageOK(upstream.url, 'library/app', image, 'v1');
    const mirror = await start({ proxy: { remoteurl: upstream.url } });
    const manifest = await fetch(`${mirror.url}/v2/library/app/manifests/v1`, { headers: { accept: image.mediaType } });
    assert.equal(manifest.status, 200);
    await manifest.arrayBuffer();
    for (const blob of image.blobs) {
      const res = await fetch(`${mirror.url}/v2/library/app/blobs/${blob.digest}`);
      assert.equal(res.status, 200);
      assert.deepEqual(Buffer.from(await res.arrayBuffer()), blob.data);
    }
    // the record is written after the body ended: give the event loop a turn
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setTimeout(resolve, 50));
    assert.deepEqual(await indexDifferences(mirror), []);
    const rows = await withIndex(mirror, (index) => index.readRepository('library/app'));
    assert.deepEqual(rows?.manifests[0].platforms, [{ os: 'linux', architecture: 'amd64' }]);
  });
});
