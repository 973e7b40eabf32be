/**
 * berth's extensions of the V2 API from the metadata index (docs/api.md): repositories with size,
 * last push and pulls, sorted and paged; a repository's tags sorted over the whole list; a tag's
 * history; usage deduplicated per namespace; search; discover. Access as in the V2 API: a reader
 * sees neither the repositories they may not pull nor their tags, history, usage or search hits.
 * Without the index every extension says so (404 UNSUPPORTED) and discover lists none.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { basic, writeHtpasswd } from '../helpers/auth.js';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { buildImage, pushImageOK, putManifest, type Image } from '../helpers/images.js';
import { needPostgres, startPostgres, type TestPostgres } from '../helpers/postgres.js';

const USERS = { admin: 'admin-secret-pw', reader: 'reader-secret-pw' };
const ACCESS = {
  '**': { admin: ['pull', 'push', 'delete'] },
  'team/**': { admin: ['pull', 'push', 'delete'], reader: ['pull'] },
};
const ADMIN = { authorization: basic('admin', USERS.admin) };
const READER = { authorization: basic('reader', USERS.reader) };

/** `b` with `a`'s last layer added: two images sharing one layer */
function sharingLayer(a: Image, b: Image): Image {
  const shared = a.blobs[a.blobs.length - 1];
  const doc = JSON.parse(b.body.toString());
  doc.layers.push({ mediaType: shared.mediaType, digest: shared.digest, size: shared.size });
  const body = Buffer.from(JSON.stringify(doc));
  const digest = `sha256:${createHash('sha256').update(body).digest('hex')}`;
  return { ...b, body, digest, blobs: [...b.blobs, shared], descriptor: { ...b.descriptor, digest, size: body.length } };
}

const sum = (blobs: { size: number }[]) => blobs.reduce((total, b) => total + b.size, 0);

async function get(registry: TestRegistry, path: string, headers: Record<string, string> = ADMIN): Promise<{ status: number; headers: Headers; body: any }> {
  const res = await fetch(`${registry.url}${path}`, { headers });
  const text = await res.text();
  return { status: res.status, headers: res.headers, body: text ? JSON.parse(text) : undefined };
}

/** the engines the index runs on: the `metadata` block naming a fresh database */
const ENGINES: { name: string; options: { skip: string | false }; metadata: (dir: string) => Promise<Record<string, unknown>>; stop?: () => Promise<void> }[] = (() => {
  let pg: TestPostgres | undefined;
  return [
    { name: 'SQLite', options: { skip: false }, metadata: async () => ({}) },
    {
      name: 'PostgreSQL',
      options: needPostgres(),
      metadata: async () => {
        pg ??= await startPostgres();
        return { postgres: { url: await pg.createDatabase('browse') } };
      },
      stop: async () => {
        await pg?.stop();
        pg = undefined;
      },
    },
  ];
})();

for (const engine of ENGINES) describe(`the _berth extensions (metadata index on, ${engine.name})`, engine.options, () => {
  let dir: string;
  let registry: TestRegistry;
  const one = buildImage('oci-manifest', { annotations: { 'org.example.team': 'core-platform' } });
  const two = sharingLayer(one, buildImage('oci-manifest'));
  const moved = [buildImage('oci-manifest'), buildImage('oci-manifest'), buildImage('oci-manifest')];
  const secret = buildImage('oci-manifest', { annotations: { 'org.example.team': 'core-secrets' } });

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'berth-browse-api-'));
    await writeHtpasswd(join(dir, 'htpasswd'), USERS);
    const root = join(dir, 'root');
    const metadata = await engine.metadata(dir);
    // the helpers push anonymously: first without auth, then the same root and index with it
    const open = await startBerth({ metadata }, { root });
    try {
      await pushContents(open.url);
    } finally {
      await open.stop();
    }
    registry = await startBerth({ metadata, auth: { htpasswd: { realm: 'berth', path: join(dir, 'htpasswd') }, access: ACCESS } }, { root });
    const put = await fetch(`${registry.url}/v2/team/one/manifests/stable`, { method: 'PUT', body: moved[2].body, headers: { ...ADMIN, 'content-type': moved[2].mediaType } });
    assert.equal(put.status, 201);
  });
  after(async () => {
    await registry?.stop();
    await engine.stop?.();
    await rm(dir, { recursive: true, force: true });
  });

  async function pushContents(url: string): Promise<void> {
    const registry = { url };
    await pushImageOK(registry.url, 'team/one', one, 'v1');
    await pushImageOK(registry.url, 'team/two', two, 'v1');
    await pushImageOK(registry.url, 'team/two', two, 'v2');
    await pushImageOK(registry.url, 'secret/keys', secret, 'latest');
    // `stable` moves twice: moved[0], then moved[1], then moved[2] (that push authenticated)
    await pushImageOK(registry.url, 'team/one', moved[0], 'stable');
    await pushImageOK(registry.url, 'team/one', moved[1], 'stable');
    await pushImageOK(registry.url, 'team/one', moved[2]);
  }

  it('lists repositories with size, last push, pulls and tag count, as JSON', async () => {
    const res = await get(registry, '/v2/_berth/ext/repositories');
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/json; charset=utf-8');
    assert.equal(res.headers.get('link'), null);
    assert.deepEqual(
      res.body.repositories.map((r: any) => r.name),
      ['secret/keys', 'team/one', 'team/two'],
    );
    const two_ = res.body.repositories.find((r: any) => r.name === 'team/two');
    // its own blobs once each (the shared layer included) plus its manifest's bytes
    assert.equal(two_.size, sum(two.blobs) + two.body.length);
    assert.equal(two_.tags, 2);
    assert.equal(two_.pulls, 0);
    assert.match(two_.pushed, /^\d{4}-\d\d-\d\dT/);
  });

  it('sorts repositories by size over the whole list and pages them with a Link that keeps the sort', async () => {
    const all = (await get(registry, '/v2/_berth/ext/repositories?sort=size&desc=1')).body.repositories;
    const sizes = all.map((r: any) => r.size);
    assert.deepEqual(sizes, [...sizes].sort((a, b) => b - a));
    const first = await get(registry, '/v2/_berth/ext/repositories?sort=size&desc=1&n=2');
    assert.deepEqual(first.body.repositories, all.slice(0, 2));
    const next = first.headers.get('link');
    const last = first.body.repositories[1];
    assert.equal(next, `</v2/_berth/ext/repositories?n=2&last=${encodeURIComponent(`${last.size},${last.name}`)}&sort=size&desc=1>; rel="next"`);
    const second = await get(registry, next!.slice(1, next!.indexOf('>')));
    assert.deepEqual(second.body.repositories, all.slice(2));
    assert.equal(second.headers.get('link'), null);
  });

  it('filters repositories by q and to what the caller may pull', async () => {
    assert.deepEqual((await get(registry, '/v2/_berth/ext/repositories?q=two')).body.repositories.map((r: any) => r.name), ['team/two']);
    const reader = await get(registry, '/v2/_berth/ext/repositories?sort=pushed', READER);
    assert.equal(reader.status, 200);
    assert.deepEqual(reader.body.repositories.map((r: any) => r.name).sort(), ['team/one', 'team/two']);
  });

  it("lists a repository's tags with their manifest's media type, size and push time, sorted by any of them", async () => {
    const res = await get(registry, '/v2/team/one/_berth/ext/tags?sort=pushed&desc=1');
    assert.equal(res.status, 200);
    assert.equal(res.body.name, 'team/one');
    assert.deepEqual(res.body.tags.map((t: any) => t.name), ['stable', 'v1']);
    const created = (image: Image) => JSON.parse(image.blobs[0].data.toString()).created;
    assert.deepEqual(res.body.tags[0], {
      name: 'stable',
      digest: moved[2].digest,
      mediaType: moved[2].mediaType,
      size: moved[2].body.length,
      pushed: res.body.tags[0].pushed,
      imageSize: sum(moved[2].blobs),
      created: created(moved[2]),
      platforms: ['linux/amd64'],
    });
    const bySize = (await get(registry, '/v2/team/two/_berth/ext/tags?sort=size')).body.tags;
    assert.deepEqual(bySize.map((t: any) => t.size), [two.body.length, two.body.length]);
    const paged = await get(registry, '/v2/team/one/_berth/ext/tags?n=1');
    assert.deepEqual(paged.body.tags.map((t: any) => t.name), ['stable']);
    assert.equal(paged.headers.get('link'), '</v2/team/one/_berth/ext/tags?n=1&last=stable&sort=name>; rel="next"');
    const rest = await get(registry, '/v2/team/one/_berth/ext/tags?n=1&last=stable');
    assert.deepEqual(rest.body.tags.map((t: any) => t.name), ['v1']);
  });

  it("sorts a repository's tags by the image's figures as the web interface does: size, build time, platforms, kind, digest", async () => {
    const bySize = [
      { name: 'v1', imageSize: sum(one.blobs) },
      { name: 'stable', imageSize: sum(moved[2].blobs) },
    ].sort((a, b) => a.imageSize - b.imageSize || (a.name < b.name ? -1 : 1));
    const first = await get(registry, '/v2/team/one/_berth/ext/tags?sort=imageSize&n=1');
    assert.equal(first.status, 200);
    assert.deepEqual(first.body.tags.map((t: any) => ({ name: t.name, imageSize: t.imageSize })), [bySize[0]]);
    const next = first.headers.get('link');
    assert.equal(next, `</v2/team/one/_berth/ext/tags?n=1&last=${encodeURIComponent(`${bySize[0].imageSize},${bySize[0].name}`)}&sort=imageSize>; rel="next"`);
    const second = await get(registry, next!.slice(1, next!.indexOf('>')));
    assert.deepEqual(second.body.tags.map((t: any) => ({ name: t.name, imageSize: t.imageSize })), [bySize[1]]);
    assert.equal(second.headers.get('link'), null);
    for (const [sort, value] of [['created', (t: any) => t.created], ['platforms', (t: any) => t.platforms.join(',')], ['mediaType', (t: any) => t.mediaType], ['digest', (t: any) => t.digest]] as const) {
      const desc = (await get(registry, `/v2/team/one/_berth/ext/tags?sort=${sort}&desc=1`)).body.tags;
      const sorted = [...desc].sort((a: any, b: any) => (value(a) < value(b) ? 1 : value(a) > value(b) ? -1 : a.name < b.name ? 1 : -1));
      assert.deepEqual(desc.map((t: any) => t.name), sorted.map((t: any) => t.name), sort);
    }
    const bad = await get(registry, '/v2/team/one/_berth/ext/tags?sort=imageSize&last=big,v1');
    assert.equal(bad.status, 400);
    assert.match(bad.body.errors[0].message, /last: "big,v1" is not a cursor of sort=imageSize/);
  });

  it("answers a tag's history after it moved twice: which digest from when to when, and who pushed", async () => {
    const res = await get(registry, '/v2/team/one/_berth/ext/history?tag=stable');
    assert.equal(res.status, 200);
    const { history } = res.body;
    assert.deepEqual(history.map((h: any) => h.digest), [moved[2].digest, moved[1].digest, moved[0].digest]);
    assert.equal(history[0].to, undefined, 'the current entry is open');
    assert.equal(history[0].pushedBy, 'admin');
    assert.equal(history[1].pushedBy, undefined, 'an anonymous push has no pusher');
    assert.equal(history[1].to, history[0].from);
    assert.equal(history[2].to, history[1].from);
    const paged = await get(registry, '/v2/team/one/_berth/ext/history?tag=stable&n=2');
    assert.deepEqual(paged.body.history, history.slice(0, 2));
    const next = paged.headers.get('link')!;
    const rest = await get(registry, next.slice(1, next.indexOf('>')));
    assert.deepEqual(rest.body.history, history.slice(2));
    assert.equal((await get(registry, '/v2/team/one/_berth/ext/history?tag=never')).body.errors[0].code, 'MANIFEST_UNKNOWN');
  });

  it('counts usage deduplicated: the layer two repositories of team/ share counts once for team/, once in each repository', async () => {
    const res = await get(registry, '/v2/_berth/ext/usage?namespace=team');
    assert.equal(res.status, 200);
    const blobs = new Map([...one.blobs, ...two.blobs, ...moved.flatMap((m) => m.blobs)].map((b) => [b.digest, b.size]));
    const manifests = [one, two, ...moved].reduce((total, m) => total + m.body.length, 0);
    assert.deepEqual(res.body, {
      namespace: 'team',
      repositories: 2,
      bytes: sum([...blobs.values()].map((size) => ({ size }))) + manifests,
      blobs: blobs.size,
      blobBytes: sum([...blobs.values()].map((size) => ({ size }))),
      manifests: 5,
      manifestBytes: manifests,
    });
    assert.deepEqual((await get(registry, '/v2/_berth/ext/usage?namespace=team/')).body, res.body);
    const all = await get(registry, '/v2/_berth/ext/usage');
    assert.deepEqual(all.body.namespaces.map((n: any) => n.namespace), ['secret', 'team']);
    assert.deepEqual(all.body.namespaces[1], res.body);
    assert.equal(all.body.namespaces[0].bytes, sum(secret.blobs) + secret.body.length);
  });

  it('counts for a reader only the repositories they may pull', async () => {
    const all = await get(registry, '/v2/_berth/ext/usage', READER);
    assert.deepEqual(all.body.namespaces.map((n: any) => n.namespace), ['team']);
    const hidden = await get(registry, '/v2/_berth/ext/usage?namespace=secret', READER);
    assert.equal(hidden.status, 200);
    assert.equal(hidden.body.bytes, 0);
    assert.equal(hidden.body.repositories, 0);
  });

  it('searches label and annotation values, digest prefixes, tags and repositories', async () => {
    const label = await get(registry, '/v2/_berth/ext/search?q=berth%20test');
    assert.equal(label.status, 200);
    assert.ok(label.body.values.some((v: any) => v.kind === 'label' && v.value === 'berth test image'));
    const annotation = (await get(registry, '/v2/_berth/ext/search?q=core-')).body;
    assert.deepEqual(annotation.values.map((v: any) => [v.repository, v.kind, v.key, v.value]).sort(), [
      ['secret/keys', 'annotation', 'org.example.team', 'core-secrets'],
      ['team/one', 'annotation', 'org.example.team', 'core-platform'],
    ]);
    const hex = two.digest.slice('sha256:'.length, 'sha256:'.length + 10);
    const digest = (await get(registry, `/v2/_berth/ext/search?q=${hex}`)).body;
    assert.deepEqual(digest.digests, [{ repository: 'team/two', digest: two.digest, mediaType: two.mediaType }]);
    assert.deepEqual((await get(registry, `/v2/_berth/ext/search?q=${encodeURIComponent(two.digest.slice(0, 20))}`)).body.digests, digest.digests);
    const tags = (await get(registry, '/v2/_berth/ext/search?q=stab')).body;
    assert.deepEqual(tags.tags, [{ repository: 'team/one', tag: 'stable', digest: moved[2].digest }]);
    assert.deepEqual((await get(registry, '/v2/_berth/ext/search?q=secret/k')).body.repositories, ['secret/keys']);
    assert.deepEqual((await get(registry, '/v2/_berth/ext/search?q=team')).body.repositories, ['team/one', 'team/two']);
  });

  it("shows a reader neither a repository they may not pull, nor its tags, history or search hits", async () => {
    const tags = await get(registry, '/v2/secret/keys/_berth/ext/tags', READER);
    assert.equal(tags.status, 403);
    assert.equal(tags.body.errors[0].code, 'DENIED');
    assert.equal((await get(registry, '/v2/secret/keys/_berth/ext/history?tag=latest', READER)).status, 403);
    assert.equal((await get(registry, '/v2/team/one/_berth/ext/tags', READER)).status, 200);
    const search = (await get(registry, '/v2/_berth/ext/search?q=core-', READER)).body;
    assert.deepEqual(search.values.map((v: any) => v.repository), ['team/one']);
    assert.deepEqual((await get(registry, '/v2/_berth/ext/search?q=secret', READER)).body.repositories, []);
    assert.equal((await get(registry, '/v2/_berth/ext/repositories', {})).status, 401);
  });

  it('answers bad parameters with 400 and a message that says what is allowed', async () => {
    const cases: [string, string, RegExp][] = [
      ['/v2/_berth/ext/repositories?sort=stars', 'UNSUPPORTED', /sort: repositories sort by name, size, pushed, pulls, not "stars"/],
      ['/v2/_berth/ext/repositories?desc=yes', 'UNSUPPORTED', /desc: 1 for descending/],
      ['/v2/_berth/ext/repositories?n=abc', 'PAGINATION_NUMBER_INVALID', /not a non-negative integer/],
      ['/v2/_berth/ext/repositories?sort=size&last=big,team/one', 'UNSUPPORTED', /last: "big,team\/one" is not a cursor of sort=size/],
      ['/v2/team/one/_berth/ext/tags?sort=stars', 'UNSUPPORTED', /tags sort by name, pushed, size, imageSize, created, platforms, mediaType, digest, not "stars"/],
      ['/v2/team/one/_berth/ext/history', 'UNSUPPORTED', /tag: the tag whose history is wanted is required/],
      ['/v2/team/one/_berth/ext/history?tag=-bad', 'TAG_INVALID', /invalid tag/],
      ['/v2/_berth/ext/search', 'UNSUPPORTED', /q: the text to search for is required/],
      ['/v2/_berth/ext/search?q=a&n=1000', 'PAGINATION_NUMBER_INVALID', /above the maximum/],
      ['/v2/_berth/ext/usage?namespace=Team', 'NAME_INVALID', /namespace: "Team" is not a repository name/],
    ];
    for (const [path, code, message] of cases) {
      const res = await get(registry, path);
      assert.equal(res.status, 400, path);
      assert.equal(res.headers.get('content-type'), 'application/json; charset=utf-8');
      assert.equal(res.body.errors[0].code, code, path);
      assert.match(res.body.errors[0].message, message, path);
    }
    const unknown = await get(registry, '/v2/team/none/_berth/ext/tags');
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body.errors[0].code, 'NAME_UNKNOWN');
  });

  it('lists its extensions at /v2/_oci/ext/discover', async () => {
    const res = await get(registry, '/v2/_oci/ext/discover');
    assert.equal(res.status, 200);
    assert.equal(res.body.extensions.length, 1);
    assert.equal(res.body.extensions[0].name, '_berth');
    assert.ok(res.body.extensions[0].endpoints.includes('{name}/_berth/ext/tags'));
  });
});

describe('the _berth extensions without the index (storage-only operation)', () => {
  let registry: TestRegistry;
  before(async () => {
    registry = await startBerth({ metadata: { enabled: false } });
    await pushImageOK(registry.url, 'team/one', buildImage('oci-manifest'), 'v1');
  });
  after(() => registry?.stop());

  it('answers every extension 404 UNSUPPORTED saying the index is off, never an empty list; discover lists none', async () => {
    for (const path of ['/v2/_berth/ext/repositories', '/v2/team/one/_berth/ext/tags', '/v2/team/one/_berth/ext/history?tag=v1', '/v2/_berth/ext/usage', '/v2/_berth/ext/search?q=a']) {
      const res = await get(registry, path, {});
      assert.equal(res.status, 404, path);
      assert.equal(res.body.errors[0].code, 'UNSUPPORTED', path);
      assert.match(res.body.errors[0].message, /needs the metadata index, and this registry runs without it/, path);
    }
    assert.deepEqual((await get(registry, '/v2/_oci/ext/discover', {})).body, { extensions: [] });
  });
});

/**
 * The web interface's tag list (/ui/api/.../tags/list) with the index: every column it offers
 * sorts over the whole list, keyset-paged, with no "first 1,000" notice: 1,007 tags, those that
 * sort first or last by size and build time named beyond the first 1,000 by name. An index's size
 * is its children's, its build time its newest child's; a tag without a value (an artifact has no
 * build time, no platform) comes last in either direction.
 */
for (const engine of ENGINES) describe(`the web interface's tag list from the index, every column over the whole list (${engine.name})`, engine.options, () => {
  let dir: string;
  let registry: TestRegistry;
  /** every tag with its image */
  const tags = new Map<string, Image>();
  const newMillisecond = async () => {
    const at = Date.now();
    while (Date.now() === at) await new Promise((resolve) => setTimeout(resolve, 2));
  };

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'berth-browse-figures-'));
    // built in this order, each in a later millisecond: their configs' `created` grow
    const small = buildImage('oci-manifest', { layers: 1, layerSize: 10 });
    await newMillisecond();
    const middle = buildImage('oci-manifest', { layers: 1, layerSize: 100 });
    await newMillisecond();
    const index = buildImage('oci-index', { layers: 1, layerSize: 150 });
    const artifacts = [buildImage('oci-artifact', { annotations: {} }), buildImage('oci-artifact', { annotations: {} })];
    registry = await startBerth({ metadata: await engine.metadata(dir) }, { root: join(dir, 'root') });
    await pushImageOK(registry.url, 'many/tags', small, 'z-small');
    await pushImageOK(registry.url, 'many/tags', index, 'z-index');
    await pushImageOK(registry.url, 'many/tags', artifacts[0], 'n-none1');
    await pushImageOK(registry.url, 'many/tags', artifacts[1], 'n-none2');
    await pushImageOK(registry.url, 'many/tags', middle, 'm0000');
    const put = (tag: string) => putManifest(registry.url, 'many/tags', tag, middle.body, middle.mediaType);
    const names = Array.from({ length: 1002 }, (_, i) => `m${String(i + 1).padStart(4, '0')}`);
    for (let i = 0; i < names.length; i += 20) for (const res of await Promise.all(names.slice(i, i + 20).map(put))) assert.equal(res.status, 201);
    for (const [tag, image] of [['z-small', small], ['z-index', index], ['n-none1', artifacts[0]], ['n-none2', artifacts[1]], ['m0000', middle], ...names.map((n) => [n, middle])] as [string, Image][]) tags.set(tag, image);
  });
  after(async () => {
    await registry?.stop();
    await engine.stop?.();
    await rm(dir, { recursive: true, force: true });
  });

  const imageBytes = (image: Image): number => (image.children.length > 0 ? image.children.reduce((total, c) => total + imageBytes(c), 0) : sum(image.blobs));
  const created = (image: Image): string | undefined =>
    image.children.length > 0 ? image.children.map(created).sort().pop() : image.kind === 'oci-artifact' ? undefined : JSON.parse(image.blobs[0].data.toString()).created;
  const platforms = (image: Image): string | undefined =>
    image.children.length > 0 ? image.children.map(platforms).join(',') : image.descriptor.platform && `${image.descriptor.platform.os}/${image.descriptor.platform.architecture}`;
  const VALUES: Record<string, (image: Image) => string | number | undefined> = {
    size: imageBytes,
    created,
    platforms,
    mediaType: (image) => image.mediaType,
    digest: (image) => image.digest,
  };

  /** what the storage-backed list would give over every tag: by (value, tag), those without a value last */
  function expected(sort: string, desc: boolean): string[] {
    const value = VALUES[sort];
    const order = (a: string | number, b: string | number) => (a === b ? 0 : (a < b ? -1 : 1) * (desc ? -1 : 1));
    return [...tags.keys()].sort((a, b) => {
      const [x, y] = [value(tags.get(a)!), value(tags.get(b)!)];
      if (x === undefined || y === undefined) return x === y ? order(a, b) : x === undefined ? 1 : -1;
      return order(x, y) || order(a, b);
    });
  }

  async function walk(sort: string, desc: boolean): Promise<{ tag: string; size?: number; created?: string }[]> {
    const seen: { tag: string; size?: number; created?: string }[] = [];
    let next: Record<string, string> | undefined = {};
    while (next) {
      const { status, body } = await get(registry, `/ui/api/repositories/many/tags/tags/list?n=100&sort=${sort}${desc ? '&desc=1' : ''}&${new URLSearchParams(next)}`, {});
      assert.equal(status, 200, JSON.stringify(body));
      assert.deepEqual([body.total, body.sortedAmong], [1007, undefined]);
      seen.push(...body.tags);
      next = body.next;
    }
    return seen;
  }

  for (const desc of [false, true]) {
    it(`sorts 1,007 tags by image size ${desc ? 'descending' : 'ascending'} over the whole list: the ${desc ? 'smallest' : 'largest'} on the last page`, async () => {
      const seen = await walk('size', desc);
      assert.deepEqual(seen.map((t) => t.tag), expected('size', desc));
      assert.equal(seen[seen.length - 1].tag, desc ? 'n-none1' : 'z-index'); // the artifacts are the smallest (n-none1 before n-none2 ascending), the index the largest
      const index = seen.find((t) => t.tag === 'z-index');
      assert.equal(index?.size, imageBytes(tags.get('z-index')!)); // the index's children's bytes
    });

    it(`sorts 1,007 tags by build time ${desc ? 'descending' : 'ascending'} over the whole list: the ${desc ? 'oldest' : 'newest'} on the last page, those without one last`, async () => {
      const seen = await walk('created', desc);
      assert.deepEqual(seen.map((t) => t.tag), expected('created', desc));
      const dated = seen.filter((t) => t.created !== undefined);
      assert.equal(dated[dated.length - 1].tag, desc ? 'z-small' : 'z-index');
      assert.deepEqual(seen.slice(-2).map((t) => t.tag), desc ? ['n-none2', 'n-none1'] : ['n-none1', 'n-none2']);
    });
  }

  it('sorts by platforms, kind and digest over the whole list too, both directions', async () => {
    for (const sort of ['platforms', 'mediaType', 'digest']) {
      for (const desc of [false, true]) assert.deepEqual((await walk(sort, desc)).map((t) => t.tag), expected(sort, desc), `${sort}${desc ? ' descending' : ''}`);
    }
  });

  it('pages on among the tags without a value from a cursor there, and refuses a cursor that is not one', async () => {
    const page = await get(registry, `/ui/api/repositories/many/tags/tags/list?n=5&sort=created&last=${encodeURIComponent(',n-none1')}`, {});
    assert.deepEqual(page.body.tags.map((t: { tag: string }) => t.tag), ['n-none2']);
    const bad = await get(registry, `/ui/api/repositories/many/tags/tags/list?n=5&sort=size&last=big,m0001`, {});
    assert.equal(bad.status, 400);
    assert.equal(bad.body.errors[0].code, 'UNSUPPORTED');
  });
});
