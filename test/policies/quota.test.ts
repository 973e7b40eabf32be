/**
 * Quotas (policies[].quota, src/policies/quota.ts): bytes counted deduplicated over the scope from
 * the metadata index; a manifest PUT that would take the scope over is refused (403 DENIED, the
 * detail says the quota, the use and what the manifest adds); blob uploads are refused once the
 * scope is full; `repositories` counts repositories; a delete gives the space back; concurrent
 * pushes never take the scope over; without the index a quota stops start-up.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { buildImage, pushContent, pushImage, pushImageOK, putManifest, type Image } from '../helpers/images.js';
import { ConfigError } from '../../src/config/errors.js';
import { openMetadataIndex } from '../../src/features/metadata.js';
import { collectGarbage } from '../../src/registry/gc/index.js';

const registries: TestRegistry[] = [];
after(async () => {
  for (const registry of registries) await registry.stop().catch(() => undefined);
});

async function start(policies: unknown[], metadata: unknown = {}): Promise<TestRegistry> {
  const registry = await startBerth({ metadata, policies });
  registries.push(registry);
  return registry;
}

/** an image's bytes as a quota counts them: its manifest and its distinct blobs */
function sizeOf(image: Image): number {
  return image.body.length + [...new Map(image.blobs.map((b) => [b.digest, b.size])).values()].reduce((a, b) => a + b, 0);
}

const image = () => buildImage('oci-manifest', { layers: 1, layerSize: 4096 });

async function firstError(res: Response): Promise<{ code: string; message: string; detail: any }> {
  return ((await res.json()) as { errors: { code: string; message: string; detail: any }[] }).errors[0];
}

describe('quotas', () => {
  it('refuses the push that would take the scope over, with the quota, the use and the manifest\'s bytes', async () => {
    const images = Array.from({ length: 4 }, image);
    const quota = sizeOf(images[0]) + sizeOf(images[1]) + sizeOf(images[2]) + 100;
    const registry = await start([{ repositories: ['team/**'], quota: { bytes: quota } }]);
    // three fit, in two repositories of the scope
    await pushImageOK(registry.url, 'team/a', images[0], 'v1');
    await pushImageOK(registry.url, 'team/b', images[1], 'v1');
    await pushImageOK(registry.url, 'team/b', images[2], 'v2');
    // the same content again, under another tag or in another repository of the scope, adds nothing
    assert.equal((await putManifest(registry.url, 'team/b', 'again', images[2].body, images[2].mediaType)).status, 201);
    const res = await pushImage(registry.url, 'team/c', images[3], 'v1');
    assert.equal(res.status, 403);
    const error = await firstError(res);
    assert.equal(error.code, 'DENIED');
    const used = sizeOf(images[0]) + sizeOf(images[1]) + sizeOf(images[2]);
    assert.deepEqual(error.detail, { policy: 'policies[0] (team/**)', quota: { bytes: quota }, use: { bytes: used, repositories: 2 }, adds: { bytes: sizeOf(images[3]) } });
    assert.match(error.message, /over its quota/);
    assert.match(error.message, new RegExp(`${used} bytes`));
    // outside the scope nothing is counted
    await pushImageOK(registry.url, 'other/x', images[3], 'v1');
    // a delete gives the space back
    assert.equal((await fetch(`${registry.url}/v2/team/a/manifests/${images[0].digest}`, { method: 'DELETE' })).status, 202);
    await pushImageOK(registry.url, 'team/c', images[3], 'v1');
  });

  it('refuses blob uploads once the scope is full', async () => {
    const first = image();
    const registry = await start([{ repositories: ['full/**'], quota: { bytes: sizeOf(first) } }]);
    await pushImageOK(registry.url, 'full/a', first, 'v1');
    const post = await fetch(`${registry.url}/v2/full/a/blobs/uploads/`, { method: 'POST' });
    assert.equal(post.status, 403);
    const error = await firstError(post);
    assert.equal(error.code, 'DENIED');
    assert.match(error.message, /is full/);
    assert.equal((await fetch(`${registry.url}/v2/elsewhere/blobs/uploads/`, { method: 'POST' })).status, 202);
  });

  it('counts repositories: a manifest PUT or a blob upload that would add one more is refused', async () => {
    const registry = await start([{ repositories: ['few/*'], quota: { repositories: 2 } }]);
    const late = image();
    await pushContent(registry.url, 'few/c', late); // blobs alone make no repository of the scope
    await pushImageOK(registry.url, 'few/a', image(), 'v1');
    await pushImageOK(registry.url, 'few/b', image(), 'v1');
    await pushImageOK(registry.url, 'few/b', image(), 'v2');
    const res = await putManifest(registry.url, 'few/c', 'v1', late.body, late.mediaType);
    assert.equal(res.status, 403);
    assert.match((await firstError(res)).message, /allows 2 repositories and has 2: few\/c would be one more/);
    const post = await fetch(`${registry.url}/v2/few/d/blobs/uploads/`, { method: 'POST' });
    assert.equal(post.status, 403);
    assert.match((await firstError(post)).message, /few\/d would be one more/);
  });

  it('holds under concurrent pushes: of six images, with room for three, three land', async () => {
    const images = Array.from({ length: 6 }, image);
    const quota = sizeOf(images[0]) * 3 + 200;
    const registry = await start([{ repositories: ['busy/**'], quota: { bytes: quota } }]);
    for (const [i, img] of images.entries()) await pushContent(registry.url, `busy/r${i}`, img);
    const answers = await Promise.all(images.map((img, i) => putManifest(registry.url, `busy/r${i}`, 'v1', img.body, img.mediaType)));
    const statuses = answers.map((r) => r.status);
    await Promise.all(answers.map((r) => r.arrayBuffer()));
    assert.equal(statuses.filter((s) => s === 201).length, 3, `statuses ${statuses}`);
    assert.equal(statuses.filter((s) => s === 403).length, 3);
  });

  it('shows use and quota in the JSON API and the web interface; a delete and garbage collection give the space back', async () => {
    const [kept, dropped] = [image(), image()];
    const registry = await start([{ repositories: ['shown/**'], quota: { bytes: '1MiB', repositories: 5 } }]);
    await pushImageOK(registry.url, 'shown/a', kept, 'v1');
    await pushImageOK(registry.url, 'shown/b', dropped, 'v1');
    const quotas = async () => ((await (await fetch(`${registry.url}/v2/_berth/ext/quotas`)).json()) as { quotas: { policy: string; use: { bytes: number; repositories: number } }[] }).quotas;
    const expected = { policy: 'policies[0] (shown/**)', repositories: ['shown/**'], quota: { bytes: 1024 * 1024, repositories: 5 }, use: { bytes: sizeOf(kept) + sizeOf(dropped), repositories: 2 } };
    assert.deepEqual(await quotas(), [expected]);
    const page = (await (await fetch(`${registry.url}/ui/api/registry`)).json()) as { quotas: unknown[] };
    assert.deepEqual(page.quotas, [expected]);
    // the delete gives the manifest's bytes back at once; garbage collection then its blobs in the index's usage
    assert.equal((await fetch(`${registry.url}/v2/shown/b/manifests/${dropped.digest}`, { method: 'DELETE' })).status, 202);
    assert.deepEqual((await quotas())[0].use, { bytes: sizeOf(kept), repositories: 1 });
    const usage = async () => ((await (await fetch(`${registry.url}/v2/_berth/ext/usage?namespace=shown`)).json()) as { bytes: number }).bytes;
    assert.equal(await usage(), sizeOf(kept) + dropped.blobs.reduce((a, b) => a + b.size, 0), 'the blobs stay linked until garbage collection');
    const index = await openMetadataIndex(registry.app.config);
    try {
      await collectGarbage(registry.app.driver, { dryRun: false, deleteUntagged: false, index });
    } finally {
      await index.close();
    }
    assert.equal(await usage(), sizeOf(kept));
  });

  it('stops start-up without the metadata index', async () => {
    const started = startBerth({ metadata: { enabled: false }, policies: [{ repositories: ['**'], quota: { bytes: '1GiB' } }] });
    started.then((r) => r.stop()).catch(() => undefined);
    await assert.rejects(started, (err: unknown) => err instanceof ConfigError && /policies\[0\]\.quota: quotas are counted from the metadata index/.test(err.message));
  });
});
