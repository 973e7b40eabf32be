import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { createApp } from '../../src/app.js';
import { validateConfig } from '../../src/config/load.js';
import { FilesystemDriver } from '../../src/storage/filesystem.js';
import { openMetadataIndex } from '../../src/features/metadata.js';
import { rebuildIndex } from '../../src/registry/indexing/rebuild.js';
import type { Digest } from '../../src/registry/digest.js';
import * as layout from '../../src/registry/layout.js';
import { linkContent } from '../../src/registry/links.js';
import { CEPH_TOOLS, stopSharedCeph } from '../helpers/ceph.js';
import { needTools } from '../helpers/tools.js';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { errorCodes, pushBlob, randomBlob, rawRequest, sha256 } from '../helpers/blobs.js';

const DIGEST = `sha256:${'ef'.repeat(32)}` as Digest;

/** a tagged repository, written straight into storage as a manifest push leaves it */
async function tag(registry: TestRegistry, name: string, ...tags: string[]): Promise<void> {
  const { driver } = registry.app;
  await driver.putContent(layout.manifestRevisionLink(name, DIGEST), linkContent(DIGEST));
  for (const t of tags) await driver.putContent(layout.tagCurrentLink(name, t), linkContent(DIGEST));
}

async function getJSON(url: string): Promise<{ res: Response; body: unknown }> {
  const res = await fetch(url);
  return { res, body: await res.json() };
}

function assertJSONType(res: Response): void {
  assert.equal(res.headers.get('content-type')?.split(';')[0], 'application/json');
}

const pad = (i: number) => String(i).padStart(3, '0');

async function seed(registry: TestRegistry): Promise<void> {
  await tag(registry, 'lib/app', 'v2', 'latest', 'v1', 'V0', '1.0');
  await tag(registry, 'many', ...Array.from({ length: 150 }, (_, i) => `t${pad(i)}`));
  await tag(registry, 'bydigest');
  await tag(registry, 'lib', 'x');
  await tag(registry, 'lib-x', 'x');
  await tag(registry, 'lib/app/sub', 'x');
  await registry.app.driver.putContent(layout.layerLink('blobonly', DIGEST), linkContent(DIGEST));
}

after(() => stopSharedCeph());

/** the registry's index made to hold what storage holds */
async function rebuildFromStorage(app: TestRegistry['app']): Promise<void> {
  const opened = await openMetadataIndex(app.config);
  try {
    await rebuildIndex(app.driver, opened);
  } finally {
    await opened.close();
  }
}

/**
 * storage written straight (as Distribution writes it), listed by storage; and the same listed by
 * the metadata index, rebuilt from that storage (`berth index rebuild`), answering the same
 */
const VARIANTS = [
  { name: 'filesystem', driver: 'filesystem', index: false },
  { name: 's3', driver: 's3', index: false },
  { name: 'filesystem, from the metadata index', driver: 'filesystem', index: true },
] as const;

for (const { name: variant, driver, index } of VARIANTS) describe(`GET /v2/<name>/tags/list and /v2/_catalog (${variant})`, driver === 's3' ? needTools(CEPH_TOOLS, 'the HTTP suite on the s3 driver') : {}, () => {
  let registry: TestRegistry; // default configuration: catalog.maxentries 1000
  let capped: TestRegistry; // catalog.maxentries 5
  let url: string;
  before(async () => {
    const metadata = { metadata: { enabled: index } };
    registry = await startBerth(metadata, { driver });
    capped = await startBerth({ ...metadata, catalog: { maxentries: 5 } }, { driver });
    url = registry.url;
    await seed(registry);
    await seed(capped);
    if (index) for (const { app } of [registry, capped]) await rebuildFromStorage(app);
  });
  after(async () => {
    await registry.stop();
    await capped.stop();
  });

  describe('tags', () => {
    it('lists all tags sorted, without Link when they fit', async () => {
      const { res, body } = await getJSON(`${url}/v2/lib/app/tags/list`);
      assert.equal(res.status, 200);
      assertJSONType(res);
      assert.equal(res.headers.get('link'), null);
      assert.deepEqual(body, { name: 'lib/app', tags: ['1.0', 'V0', 'latest', 'v1', 'v2'] });
    });

    it('pages with n and last; Link points at the next page and is absent at the end', async () => {
      const first = await getJSON(`${url}/v2/lib/app/tags/list?n=2`);
      assert.deepEqual(first.body, { name: 'lib/app', tags: ['1.0', 'V0'] });
      assert.equal(first.res.headers.get('link'), '</v2/lib/app/tags/list?n=2&last=V0>; rel="next"');
      const second = await getJSON(`${url}/v2/lib/app/tags/list?n=2&last=V0`);
      assert.deepEqual(second.body, { name: 'lib/app', tags: ['latest', 'v1'] });
      assert.equal(second.res.headers.get('link'), '</v2/lib/app/tags/list?n=2&last=v1>; rel="next"');
      const third = await getJSON(`${url}/v2/lib/app/tags/list?n=2&last=v1`);
      assert.deepEqual(third.body, { name: 'lib/app', tags: ['v2'] });
      assert.equal(third.res.headers.get('link'), null);
    });

    it('a page that ends exactly at the last tag has no Link', async () => {
      const { res, body } = await getJSON(`${url}/v2/lib/app/tags/list?n=5`);
      assert.deepEqual(body, { name: 'lib/app', tags: ['1.0', 'V0', 'latest', 'v1', 'v2'] });
      assert.equal(res.headers.get('link'), null);
    });

    it('last that is not a tag, before the first, after the end', async () => {
      assert.deepEqual((await getJSON(`${url}/v2/lib/app/tags/list?last=m`)).body, { name: 'lib/app', tags: ['v1', 'v2'] });
      assert.deepEqual((await getJSON(`${url}/v2/lib/app/tags/list?last=0&n=1`)).body, { name: 'lib/app', tags: ['1.0'] });
      const end = await getJSON(`${url}/v2/lib/app/tags/list?last=zzz`);
      assert.equal(end.res.status, 200);
      assert.deepEqual(end.body, { name: 'lib/app', tags: [] });
      assert.equal(end.res.headers.get('link'), null);
    });

    it('without n, 100 tags and a Link to the rest (n=100)', async () => {
      const { res, body } = await getJSON(`${url}/v2/many/tags/list`);
      const tags = (body as { tags: string[] }).tags;
      assert.equal(tags.length, 100);
      assert.equal(tags[99], 't099');
      assert.equal(res.headers.get('link'), '</v2/many/tags/list?n=100&last=t099>; rel="next"');
      const rest = await getJSON(`${url}/v2/many/tags/list?n=100&last=t099`);
      assert.equal((rest.body as { tags: string[] }).tags.length, 50);
      assert.equal(rest.res.headers.get('link'), null);
    });

    it('following Link headers gives every tag once', async () => {
      const seen: string[] = [];
      let next: string | undefined = '/v2/many/tags/list?n=7';
      while (next) {
        const res: Response = await fetch(`${url}${next}`);
        seen.push(...((await res.json()) as { tags: string[] }).tags);
        next = /^<([^>]+)>; rel="next"$/.exec(res.headers.get('link') ?? '')?.[1];
      }
      assert.deepEqual(seen, Array.from({ length: 150 }, (_, i) => `t${pad(i)}`));
    });

    it('n=0: an empty list and no Link', async () => {
      const { res, body } = await getJSON(`${url}/v2/many/tags/list?n=0`);
      assert.equal(res.status, 200);
      assert.deepEqual(body, { name: 'many', tags: [] });
      assert.equal(res.headers.get('link'), null);
    });

    it('n up to catalog.maxentries is accepted; without n the cap applies when below 100', async () => {
      const full = await getJSON(`${url}/v2/many/tags/list?n=1000`);
      assert.equal((full.body as { tags: string[] }).tags.length, 150);
      assert.equal(full.res.headers.get('link'), null);
      const small = await fetch(`${capped.url}/v2/many/tags/list`);
      assert.equal(((await small.json()) as { tags: string[] }).tags.length, 5);
      assert.equal(small.headers.get('link'), '</v2/many/tags/list?n=5&last=t004>; rel="next"');
      assert.equal((await fetch(`${capped.url}/v2/many/tags/list?n=6`)).status, 400);
    });

    for (const n of ['abc', '-1', '1.5', '', '1001', '1e2']) {
      it(`n=${JSON.stringify(n)}: 400 PAGINATION_NUMBER_INVALID`, async () => {
        const res = await fetch(`${url}/v2/lib/app/tags/list?n=${n}`);
        assert.equal(res.status, 400);
        assertJSONType(res);
        const body = (await res.json()) as { errors: { code: string; message: string }[] };
        assert.equal(body.errors[0].code, 'PAGINATION_NUMBER_INVALID');
        assert.match(body.errors[0].message, /from 0 to 1000/);
      });
    }

    it('a repository with manifests but no tags: 200 and no tags', async () => {
      const { res, body } = await getJSON(`${url}/v2/bydigest/tags/list`);
      assert.equal(res.status, 200);
      assert.deepEqual(body, { name: 'bydigest', tags: [] });
    });

    it('unknown repositories, blob-only ones and mere parent directories: 404 NAME_UNKNOWN', async () => {
      for (const name of ['nope', 'blobonly', 'lib/app/sub/deeper', 'lib/nope']) {
        const res = await fetch(`${url}/v2/${name}/tags/list`);
        assert.equal(res.status, 404, name);
        const body = (await res.json()) as { errors: { code: string; detail: unknown }[] };
        assert.equal(body.errors[0].code, 'NAME_UNKNOWN', name);
        assert.deepEqual(body.errors[0].detail, { name }, name);
      }
      const zero = await fetch(`${url}/v2/nope/tags/list?n=0`);
      assert.equal(zero.status, 404);
    });

    it('an invalid name: 400 NAME_INVALID', async () => {
      for (const path of ['/v2/Lib/tags/list', '/v2/lib//app/tags/list', '/v2/lib/app-/tags/list']) {
        const res = await rawRequest(url, 'GET', path);
        assert.equal(res.status, 400, path);
        assert.equal(JSON.parse(res.body).errors[0].code, 'NAME_INVALID', path);
      }
    });

    it('only GET: other methods are 405', async () => {
      const res = await fetch(`${url}/v2/lib/app/tags/list`, { method: 'DELETE' });
      assert.equal(res.status, 405);
      assert.deepEqual(await errorCodes(res), ['UNSUPPORTED']);
    });
  });

  describe('catalog', () => {
    const ALL = ['bydigest', 'lib', 'lib/app', 'lib/app/sub', 'lib-x', 'many'];

    it('without n: capped at catalog.maxentries (5) with a Link carrying n=5', async () => {
      const { res, body } = await getJSON(`${capped.url}/v2/_catalog`);
      assert.equal(res.status, 200);
      assertJSONType(res);
      assert.deepEqual(body, { repositories: ALL.slice(0, 5) });
      assert.equal(res.headers.get('link'), '</v2/_catalog?n=5&last=lib-x>; rel="next"');
      const rest = await getJSON(`${capped.url}/v2/_catalog?n=5&last=lib-x`);
      assert.deepEqual(rest.body, { repositories: ['many'] });
      assert.equal(rest.res.headers.get('link'), null);
    });

    it('pages with n; last with a / is escaped in the Link, and accepted either way', async () => {
      const first = await getJSON(`${capped.url}/v2/_catalog?n=3`);
      assert.deepEqual(first.body, { repositories: ['bydigest', 'lib', 'lib/app'] });
      assert.equal(first.res.headers.get('link'), '</v2/_catalog?n=3&last=lib%2Fapp>; rel="next"');
      for (const last of ['lib%2Fapp', 'lib/app']) {
        const second = await getJSON(`${capped.url}/v2/_catalog?n=3&last=${last}`);
        assert.deepEqual(second.body, { repositories: ['lib/app/sub', 'lib-x', 'many'] });
        assert.equal(second.res.headers.get('link'), null);
      }
    });

    it('last that is not a repository, and after the end', async () => {
      assert.deepEqual((await getJSON(`${capped.url}/v2/_catalog?last=lib/b`)).body, { repositories: ['lib-x', 'many'] });
      const end = await getJSON(`${capped.url}/v2/_catalog?last=zzz`);
      assert.deepEqual(end.body, { repositories: [] });
      assert.equal(end.res.headers.get('link'), null);
    });

    it('n=0: an empty list and no Link', async () => {
      const { res, body } = await getJSON(`${capped.url}/v2/_catalog?n=0`);
      assert.equal(res.status, 200);
      assert.deepEqual(body, { repositories: [] });
      assert.equal(res.headers.get('link'), null);
    });

    for (const n of ['abc', '-1', '1.5', '', '6']) {
      it(`n=${JSON.stringify(n)}: 400 PAGINATION_NUMBER_INVALID`, async () => {
        const res = await fetch(`${capped.url}/v2/_catalog?n=${n}`);
        assert.equal(res.status, 400);
        assert.deepEqual(await errorCodes(res), ['PAGINATION_NUMBER_INVALID']);
      });
    }
  });
});

describe('tags and catalog behind http.prefix, on an empty in-memory registry', () => {
  let registry: TestRegistry;
  before(async () => {
    registry = await startBerth({ http: { prefix: '/registry/' } }, { driver: 'inmemory' }); // no index on inmemory: storage answers
  });
  after(() => registry.stop());

  it('an empty registry has an empty catalog', async () => {
    const { res, body } = await getJSON(`${registry.url}/registry/v2/_catalog`);
    assert.equal(res.status, 200);
    assert.deepEqual(body, { repositories: [] });
    assert.equal(res.headers.get('link'), null);
  });

  it('Link carries the prefix', async () => {
    await tag(registry, 'a', 'x', 'y');
    await tag(registry, 'b', 'x');
    const tags = await fetch(`${registry.url}/registry/v2/a/tags/list?n=1`);
    assert.equal(tags.headers.get('link'), '</registry/v2/a/tags/list?n=1&last=x>; rel="next"');
    const catalog = await fetch(`${registry.url}/registry/v2/_catalog?n=1`);
    assert.equal(catalog.headers.get('link'), '</registry/v2/_catalog?n=1&last=a>; rel="next"');
  });
});

describe('tags and catalog after a push through the API', () => {
  let registry: TestRegistry;
  before(async () => {
    registry = await startBerth();
  });
  after(() => registry.stop());

  it('a pushed image shows up in its tag list and the catalog; a blob-only push does not', async () => {
    const { url } = registry;
    const config = Buffer.from(JSON.stringify({ architecture: 'amd64', os: 'linux', rootfs: { type: 'layers', diff_ids: [] } }));
    const layer = randomBlob(64);
    assert.equal((await pushBlob(url, 'pushed/app', config)).status, 201);
    assert.equal((await pushBlob(url, 'pushed/app', layer.data)).status, 201);
    assert.equal((await pushBlob(url, 'blobs/only', layer.data)).status, 201);
    const manifest = JSON.stringify({
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.manifest.v1+json',
      config: { mediaType: 'application/vnd.oci.image.config.v1+json', digest: sha256(config), size: config.length },
      layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip', digest: layer.digest, size: 64 }],
    });
    const put = await fetch(`${url}/v2/pushed/app/manifests/v1`, {
      method: 'PUT',
      body: manifest,
      headers: { 'content-type': 'application/vnd.oci.image.manifest.v1+json' },
    });
    assert.equal(put.status, 201, await put.text());
    assert.deepEqual((await getJSON(`${url}/v2/pushed/app/tags/list`)).body, { name: 'pushed/app', tags: ['v1'] });
    assert.deepEqual((await getJSON(`${url}/v2/_catalog`)).body, { repositories: ['pushed/app'] });
    assert.equal((await fetch(`${url}/v2/blobs/only/tags/list`)).status, 404);
  });
});

describe('tag lists from the cache stay right when tags change through the API or behind the registry (filesystem, one root)', () => {
  // berth A keeps tag lists (its driver vouches for a tags directory 100 ms after its last change
  // instead of 2 s, so the test waits little); berth B, another instance on the same root, and
  // plain file writes (as Distribution makes them) change the tags
  const SETTLE_MS = 100;
  const settle = () => new Promise<void>((r) => setTimeout(r, SETTLE_MS + 50));
  const REPO = 'cached/app';
  let root: string;
  let a: { url: string; close(): Promise<void> };
  let b: TestRegistry;
  const layer = randomBlob(32);
  const tagsDir = () => join(root, layout.tagsDir(REPO));

  before(async () => {
    root = await mkdtemp(join(tmpdir(), 'berth-tags-cache-'));
    const config = validateConfig(
      // storage's listings and their cache: the index would not see the plain file writes (the reconciler repairs those)
      { version: '0.1', log: { level: 'error', accesslog: { disabled: true } }, storage: { filesystem: { rootdirectory: root }, delete: { enabled: true } }, http: { addr: '127.0.0.1:0', secret: 's' }, metadata: { enabled: false } },
      'test',
    );
    const app = await createApp(config, { logger: pino({ level: 'silent' }), driver: new FilesystemDriver({ rootdirectory: root, settleMs: SETTLE_MS }) });
    a = { url: await app.listen({ host: '127.0.0.1', port: 0 }), close: () => app.close() };
    b = await startBerth({ metadata: { enabled: false } }, { root });
    for (const url of [a.url, b.url]) assert.equal((await pushBlob(url, REPO, layer.data)).status, 201);
  });
  after(async () => {
    await a?.close();
    await b?.stop();
    await rm(root, { recursive: true, force: true });
  });

  /** pushes an image of its own (a config naming the tag) as `tag`; returns the manifest digest */
  async function pushTag(url: string, tag: string): Promise<string> {
    const config = Buffer.from(JSON.stringify({ architecture: 'amd64', os: 'linux', rootfs: { type: 'layers', diff_ids: [] }, tag }));
    assert.equal((await pushBlob(url, REPO, config)).status, 201);
    const manifest = JSON.stringify({
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.manifest.v1+json',
      config: { mediaType: 'application/vnd.oci.image.config.v1+json', digest: sha256(config), size: config.length },
      layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip', digest: layer.digest, size: layer.data.length }],
    });
    const put = await fetch(`${url}/v2/${REPO}/manifests/${tag}`, { method: 'PUT', body: manifest, headers: { 'content-type': 'application/vnd.oci.image.manifest.v1+json' } });
    assert.equal(put.status, 201, await put.text());
    return sha256(manifest);
  }

  async function deleteManifest(url: string, digest: string): Promise<void> {
    const res = await fetch(`${url}/v2/${REPO}/manifests/${digest}`, { method: 'DELETE' });
    assert.equal(res.status, 202, await res.text());
  }

  /** every tag A lists, following its Link headers 2 at a time, and the Links it sent */
  async function pagesOnA(): Promise<{ tags: string[]; links: string[] }> {
    const tags: string[] = [];
    const links: string[] = [];
    for (let next: string | null = `/v2/${REPO}/tags/list?n=2`; next !== null; ) {
      const { res, body } = await getJSON(`${a.url}${next}`);
      assert.equal(res.status, 200);
      const page = (body as { tags: string[] }).tags;
      tags.push(...page);
      const link = res.headers.get('link');
      if (link !== null) links.push(link);
      next = link === null ? null : /^<([^>]+)>/.exec(link)![1];
    }
    return { tags, links };
  }

  const linkAfter = (last: string) => `</v2/${REPO}/tags/list?n=2&last=${last}>; rel="next"`;

  it('pages and Link follow tags pushed and deleted through the API of A itself and of another instance', async () => {
    const digests: Record<string, string> = {};
    for (const tag of ['v1', 'v3', 'v5']) digests[tag] = await pushTag(a.url, tag);
    await settle();
    assert.deepEqual(await pagesOnA(), { tags: ['v1', 'v3', 'v5'], links: [linkAfter('v3')] });
    assert.deepEqual(await pagesOnA(), { tags: ['v1', 'v3', 'v5'], links: [linkAfter('v3')] }); // from the cache

    digests.v2 = await pushTag(b.url, 'v2'); // another instance, right after A's cached read
    assert.deepEqual(await pagesOnA(), { tags: ['v1', 'v2', 'v3', 'v5'], links: [linkAfter('v2')] });
    await settle();
    assert.deepEqual(await pagesOnA(), { tags: ['v1', 'v2', 'v3', 'v5'], links: [linkAfter('v2')] });

    await deleteManifest(b.url, digests.v1);
    assert.deepEqual(await pagesOnA(), { tags: ['v2', 'v3', 'v5'], links: [linkAfter('v3')] });
    await settle();
    assert.deepEqual(await pagesOnA(), { tags: ['v2', 'v3', 'v5'], links: [linkAfter('v3')] });

    digests.v4 = await pushTag(a.url, 'v4'); // A's own push, read back at once
    assert.deepEqual(await pagesOnA(), { tags: ['v2', 'v3', 'v4', 'v5'], links: [linkAfter('v3')] });
    await settle();
    assert.deepEqual(await pagesOnA(), { tags: ['v2', 'v3', 'v4', 'v5'], links: [linkAfter('v3')] });
    await deleteManifest(a.url, digests.v5);
    assert.deepEqual(await pagesOnA(), { tags: ['v2', 'v3', 'v4'], links: [linkAfter('v3')] });

    await settle();
    assert.deepEqual(await pagesOnA(), { tags: ['v2', 'v3', 'v4'], links: [linkAfter('v3')] }); // kept
    digests.v0 = await pushTag(b.url, 'v0');
    await settle(); // A reads the directory only once it has settled again: the new mtime tells
    assert.deepEqual(await pagesOnA(), { tags: ['v0', 'v2', 'v3', 'v4'], links: [linkAfter('v2')] });
    await deleteManifest(b.url, digests.v0);
    await settle();
    assert.deepEqual(await pagesOnA(), { tags: ['v2', 'v3', 'v4'], links: [linkAfter('v3')] });

    await pushTag(b.url, 'v3'); // re-pointed by another instance: the same names
    assert.deepEqual(await pagesOnA(), { tags: ['v2', 'v3', 'v4'], links: [linkAfter('v3')] });
    for (const tag of ['v2', 'v3', 'v4']) await deleteManifest(b.url, (await fetch(`${a.url}/v2/${REPO}/manifests/${tag}`, { method: 'HEAD' })).headers.get('docker-content-digest')!);
    assert.deepEqual(await pagesOnA(), { tags: [], links: [] });
  });

  it('a tag written straight into the root in the same timestamp tick as a listing is listed at once', async () => {
    await pushTag(a.url, 'w1');
    await pushTag(a.url, 'w3');
    // whole milliseconds, so that utimes can give the directory exactly this mtime again
    const { mtime } = await stat(tagsDir());
    await utimes(tagsDir(), mtime, mtime);
    assert.deepEqual(await pagesOnA(), { tags: ['w1', 'w3'], links: [] });
    // Distribution's filesystem driver writes the tag's links; a coarse clock leaves the mtime as it was
    for (const tag of ['w2', 'w0']) {
      await mkdir(join(tagsDir(), tag, 'current'), { recursive: true });
      await writeFile(join(tagsDir(), tag, 'current', 'link'), DIGEST);
    }
    await utimes(tagsDir(), mtime, mtime);
    assert.deepEqual(await pagesOnA(), { tags: ['w0', 'w1', 'w2', 'w3'], links: [linkAfter('w1')] });
    await settle();
    assert.deepEqual(await pagesOnA(), { tags: ['w0', 'w1', 'w2', 'w3'], links: [linkAfter('w1')] });
    await rm(join(tagsDir(), 'w0'), { recursive: true });
    await rm(join(tagsDir(), 'w1'), { recursive: true });
    assert.deepEqual(await pagesOnA(), { tags: ['w2', 'w3'], links: [] });
  });
});
