/**
 * A real client from npm: @snyk/docker-registry-v2-client, the pull side of Snyk's container
 * scanner (checks /v2/, lists the catalog and tags with pagination, resolves a platform through an
 * index, reads configs and layers). Over plain HTTP (`protocol: 'http:'`) against berth.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import * as registryClient from '@snyk/docker-registry-v2-client';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { sha256 } from '../helpers/blobs.js';
import { buildImage, pushImageOK, putManifest } from '../helpers/images.js';

const HTTP = { protocol: 'http:' };

describe('@snyk/docker-registry-v2-client against berth', () => {
  let registry: TestRegistry;
  let base: string;
  let work: string;
  const index = buildImage('oci-index', { layers: 2, layerSize: 40_000 });
  const single = buildImage('docker-v2', { layers: 3, layerSize: 20_000 });
  const TAGS = Array.from({ length: 130 }, (_, i) => `v${String(i).padStart(3, '0')}`);
  const REPOS = ['snyk/a', 'snyk/b', 'snyk/c', 'snyk/d', 'snyk/e'];

  before(async () => {
    registry = await startBerth();
    base = new URL(registry.url).host;
    work = await mkdtemp(join(tmpdir(), 'berth-snyk-'));
    await pushImageOK(registry.url, 'snyk/index', index, 'multi');
    await pushImageOK(registry.url, 'snyk/single', single, TAGS[0]);
    for (const tag of TAGS.slice(1)) {
      const res = await putManifest(registry.url, 'snyk/single', tag, single.body, single.mediaType);
      assert.equal(res.status, 201);
    }
    for (const repo of REPOS) await pushImageOK(registry.url, repo, single, 'latest');
  });
  after(async () => {
    await registry?.stop();
    if (work) await rm(work, { recursive: true, force: true });
  });

  it('checkSupport: the registry speaks V2', async () => {
    await registryClient.checkSupport(base, undefined, undefined, HTTP);
  });

  it('getTags follows Link pagination through 130 tags', async () => {
    assert.deepEqual(await registryClient.getTags(base, 'snyk/single', undefined, undefined, 100, 10, HTTP), TAGS);
    assert.deepEqual(await registryClient.getTags(base, 'snyk/single', undefined, undefined, 7, 100, HTTP), TAGS);
  });

  it('getRepos pages through the catalog', async () => {
    const repos = await registryClient.getRepos(base, undefined, undefined, 2, 100, HTTP);
    assert.deepEqual(repos, [...REPOS, 'snyk/index', 'snyk/single'].sort());
  });

  it('getManifest resolves each platform of an index; configs and layers come back byte for byte', async () => {
    for (const child of index.children) {
      const platform = child.descriptor.platform!;
      const manifest = await registryClient.getManifest(base, 'snyk/index', 'multi', undefined, undefined, HTTP, platform);
      assert.equal(manifest.indexDigest, index.digest);
      assert.equal(manifest.manifestDigest, child.digest);
      assert.deepEqual(manifest.layers.map((l) => l.digest), child.blobs.slice(1).map((b) => b.digest));
      const config = (await registryClient.getImageConfig(base, 'snyk/index', manifest.config.digest, undefined, undefined, HTTP)) as { architecture: string };
      assert.equal(config.architecture, platform.architecture);
      for (const blob of child.blobs.slice(1)) {
        const layer = await registryClient.getLayer(base, 'snyk/index', blob.digest, undefined, undefined, HTTP);
        assert.ok(Buffer.from(layer).equals(blob.data), blob.digest);
      }
    }
  });

  it('getManifest of a docker image; downloadLayer streams a layer to a file; getImageSize', async () => {
    const manifest = await registryClient.getManifest(base, 'snyk/single', TAGS[5], undefined, undefined, HTTP);
    assert.equal(manifest.mediaType, single.mediaType);
    assert.equal(manifest.manifestDigest, single.digest);
    const layer = single.blobs[1];
    const file = join(work, 'layer.tgz');
    await registryClient.downloadLayer(file, base, 'snyk/single', layer.digest, undefined, undefined, HTTP);
    assert.equal(sha256(await readFile(file)), layer.digest);
    const size = await registryClient.getImageSize(base, 'snyk/single', TAGS[5], undefined, undefined, HTTP);
    assert.equal(size, single.blobs.slice(1).reduce((sum, b) => sum + b.size, 0));
  });
});
