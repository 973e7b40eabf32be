/**
 * The web interface's read-only helpers (/ui/api/) over HTTP: what they answer, the spec's errors
 * for bad input, the registry's rate limits (by user too: a wrong password draws from the
 * address's bucket), writes refused, and the interface below http.prefix.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { basic, writeHtpasswd } from '../helpers/auth.js';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { errorCodes } from '../helpers/blobs.js';
import { buildImage, pushImageOK, type Image } from '../helpers/images.js';
import { buildAssets } from '../helpers/ui.js';

/** a page of the repository list, each last push checked to be a time of this run and left out */
async function listed(base: string, path: string): Promise<{ repositories: { name: string; tags?: number; pushed?: string }[] }> {
  const body = (await (await fetch(base + path)).json()) as { repositories: { name: string; tags?: number; pushed?: string }[] };
  for (const r of body.repositories) {
    assert.ok(Date.now() - Date.parse(r.pushed!) < 600_000, `${r.name} last pushed ${r.pushed}`);
    delete r.pushed;
  }
  return body;
}

describe('web interface helpers', () => {
  let registry: TestRegistry;
  let index: Image;
  before(async () => {
    registry = await startBerth({}, { driver: 'inmemory' });
    index = await pushImageOK(registry.url, 'lib/multi', buildImage('docker-list'), 'v1');
    await pushImageOK(registry.url, 'lib/multi', buildImage('schema1', { name: 'lib/multi', tag: 'old' }), 'old');
    for (const tag of ['a', 'b', 'c']) await pushImageOK(registry.url, 'lib/many', buildImage('oci-manifest', { layers: 1, layerSize: 64 }), tag);
  });
  after(() => registry?.stop());

  it('lists repositories with tag counts and last push and pages them with next', async () => {
    const first = await listed(registry.url, '/ui/api/repositories?n=1');
    assert.deepEqual(first, { repositories: [{ name: 'lib/many', tags: 3 }], pushLookup: 100, next: 'lib/many' });
    const second = await listed(registry.url, '/ui/api/repositories?n=1&last=lib/many');
    assert.deepEqual(second, { repositories: [{ name: 'lib/multi', tags: 2 }], pushLookup: 100 });
    const found = await listed(registry.url, '/ui/api/repositories?q=MULTI');
    assert.deepEqual(found, { repositories: [{ name: 'lib/multi', tags: 2 }], pushLookup: 100 });
  });

  it('summarises each tag: a docker manifest list with platforms and total size, a schema1 image with its layer sizes', async () => {
    const res = await fetch(`${registry.url}/ui/api/repositories/lib/multi/tags/list`);
    assert.equal(res.headers.get('cache-control'), 'no-store');
    const body = (await res.json()) as { total: number; tags: { tag: string; digest: string; size: number; platforms: string[]; mediaType: string; created: string; pushed: string }[] };
    assert.equal(body.total, 2);
    const [old, v1] = body.tags;
    assert.equal(v1.digest, index.digest);
    assert.equal(v1.mediaType, 'application/vnd.docker.distribution.manifest.list.v2+json');
    assert.deepEqual(v1.platforms, ['linux/amd64', 'linux/arm64/v8']);
    assert.equal(v1.size, index.children.flatMap((c) => c.blobs).reduce((sum, b) => sum + b.size, 0));
    assert.ok(Date.parse(v1.created) > 0 && Date.parse(v1.pushed) > 0);
    assert.equal(old.tag, 'old');
    assert.deepEqual(old.platforms, ['linux/amd64']);
    assert.equal(old.created, '2016-06-01T00:00:00Z');
    assert.ok(old.size > 0);
  });

  it('answers bad input with the spec\'s errors', async () => {
    const cases: [string, number, string][] = [
      ['/ui/api/repositories/Bad/tags/list', 400, 'NAME_INVALID'],
      ['/ui/api/repositories/lib/none/tags/list', 404, 'NAME_UNKNOWN'],
      ['/ui/api/repositories/lib/multi/manifests/nope', 404, 'MANIFEST_UNKNOWN'],
      ['/ui/api/repositories/lib/multi/manifests/sha256:xyz', 400, 'DIGEST_INVALID'],
      ['/ui/api/repositories/lib/multi/manifests/-bad-tag', 400, 'TAG_INVALID'],
      ['/ui/api/repositories?n=5000', 400, 'PAGINATION_NUMBER_INVALID'],
      ['/ui/api/repositories/lib/multi/tags/list?n=x', 400, 'PAGINATION_NUMBER_INVALID'],
      ['/ui/api/nothing', 404, 'NOT_FOUND'],
    ];
    for (const [path, status, code] of cases) {
      const res = await fetch(`${registry.url}${path}`);
      assert.equal(res.status, status, path);
      assert.deepEqual(await errorCodes(res), [code], path);
    }
  });
});

describe('web interface helpers: rate limits and prefix', () => {
  let dir: string;
  before(async () => {
    await buildAssets(); // the page names the built assets
    dir = await mkdtemp(join(tmpdir(), 'berth-ui-api-'));
    await writeHtpasswd(join(dir, 'htpasswd'), { ann: 'ann-pw' });
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('limits by user as the V2 API does: wrong passwords draw from the address\'s bucket', async () => {
    const registry = await startBerth({ auth: { htpasswd: { realm: 'rl', path: join(dir, 'htpasswd') } }, ratelimit: { rate: 0.1, burst: 2, by: 'user' } });
    try {
      const guess = () => fetch(`${registry.url}/ui/api/repositories`, { headers: { authorization: basic('ann', 'guess') } });
      assert.equal((await guess()).status, 401);
      assert.equal((await guess()).status, 401);
      const limited = await guess();
      assert.equal(limited.status, 429);
      assert.ok(Number(limited.headers.get('retry-after')) > 0);
      // ann's own bucket is untouched
      assert.equal((await fetch(`${registry.url}/ui/api/repositories`, { headers: { authorization: basic('ann', 'ann-pw') } })).status, 200);
    } finally {
      await registry.stop();
    }
  });

  it('lives below http.prefix: /prefix/ui/ serves the page with prefixed assets and helpers; / sends browsers there', async () => {
    const registry = await startBerth({ http: { prefix: '/registry/' } }, { driver: 'inmemory' });
    try {
      await pushImageOK(`${registry.url}/registry`, 'lib/app', buildImage('oci-manifest'), 'v1');
      const page = await fetch(`${registry.url}/registry/ui/repositories/lib/app`);
      assert.equal(page.status, 200);
      const html = await page.text();
      assert.match(html, /src="\/registry\/ui\/assets\/main-[A-Z0-9]{8}\.js"/);
      assert.match(html, /"prefix":"\/registry"/);
      assert.deepEqual(await listed(registry.url, '/registry/ui/api/repositories'), { repositories: [{ name: 'lib/app', tags: 1 }], pushLookup: 100 });
      const root = await fetch(`${registry.url}/`, { headers: { accept: 'text/html' }, redirect: 'manual' });
      assert.equal(root.status, 302);
      assert.equal(root.headers.get('location'), '/registry/ui/');
    } finally {
      await registry.stop();
    }
  });
});
