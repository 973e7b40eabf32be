/**
 * berth as a pull-through cache of Distribution with htpasswd (basic auth), through a relay that
 * counts the upstream's requests, plays dead and cuts bodies: pulls by tag and digest with the
 * bytes the upstream holds, skopeo through the mirror, every write refused, one upstream GET for
 * twenty concurrent pulls of one 100 MiB blob, nothing cached from a fetch that broke, a moved tag, and an
 * upstream that stops and returns.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { writeHtpasswd } from '../helpers/auth.js';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { errorCodes, pushBlob, randomBlob, sha256 } from '../helpers/blobs.js';
import { buildImage, pushImageOK, type Image } from '../helpers/images.js';
import { startReferenceRegistry, type ReferenceRegistry } from '../helpers/reference-registry.js';
import { startRelay, type Relay } from '../helpers/relay.js';
import { needTool, toolAvailable } from '../helpers/tools.js';

const run = promisify(execFile);
const MiB = 1024 * 1024;
const USER = 'mirror';
const PASSWORD = 'mirror-secret-pw';

function blobFile(root: string, digest: string): string {
  const hex = digest.slice('sha256:'.length);
  return join(root, 'docker/registry/v2/blobs/sha256', hex.slice(0, 2), hex, 'data');
}

/** the sha256 digest of a response body, hashed as it streams (twenty 100 MiB bodies are not held) */
async function streamedDigest(res: Response): Promise<string> {
  assert.equal(res.status, 200, `${res.url}: ${res.status}`);
  const hash = createHash('sha256');
  for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) hash.update(chunk);
  return `sha256:${hash.digest('hex')}`;
}

async function bytes(res: Response): Promise<Buffer> {
  assert.equal(res.status, 200, `${res.url}: ${res.status}`);
  return Buffer.from(await res.arrayBuffer());
}

describe('pull-through cache of a basic-auth upstream', needTool('/usr/bin/docker-registry', 'the upstream registry'), () => {
  let dir: string;
  let root: string;
  let pusher: ReferenceRegistry;
  let upstream: ReferenceRegistry;
  let relay: Relay;
  let mirror: TestRegistry;
  let index: Image;
  let single: Image;

  const startUpstream = () =>
    startReferenceRegistry({ rootdirectory: root, readyStatus: 401, config: { auth: { htpasswd: { realm: 'upstream', path: join(dir, 'htpasswd') } } } });

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'berth-proxy-'));
    root = join(dir, 'upstream');
    await writeHtpasswd(join(dir, 'htpasswd'), { [USER]: PASSWORD });
    // images go in through a second Distribution without auth on the same root
    pusher = await startReferenceRegistry({ rootdirectory: root });
    upstream = await startUpstream();
    relay = await startRelay(upstream.url);
    mirror = await startBerth({ proxy: { remoteurl: relay.url, username: USER, password: PASSWORD } });
    index = await pushImageOK(pusher.url, 'library/multi', buildImage('oci-index'), 'latest');
    single = await pushImageOK(pusher.url, 'library/app', buildImage('docker-v2', { layers: 3, layerSize: 100_000 }), 'v1');
  });
  after(async () => {
    await mirror?.stop();
    await relay?.close();
    await upstream?.stop();
    await pusher?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('pulls a multi-arch index, its images and blobs by tag and digest, with the upstream bytes', async () => {
    const res = await fetch(`${mirror.url}/v2/library/multi/manifests/latest`, { headers: { accept: index.mediaType } });
    assert.deepEqual(await bytes(res), index.body);
    assert.equal(res.headers.get('docker-content-digest'), index.digest);
    assert.equal(res.headers.get('content-type'), index.mediaType);
    for (const child of index.children) {
      assert.deepEqual(await bytes(await fetch(`${mirror.url}/v2/library/multi/manifests/${child.digest}`)), child.body);
      for (const blob of child.blobs) {
        const head = await fetch(`${mirror.url}/v2/library/multi/blobs/${blob.digest}`, { method: 'HEAD' });
        assert.equal(head.status, 200);
        assert.equal(head.headers.get('content-length'), String(blob.size));
        assert.deepEqual(await bytes(await fetch(`${mirror.url}/v2/library/multi/blobs/${blob.digest}`)), blob.data);
        assert.ok(existsSync(blobFile(mirror.root!, blob.digest)), 'the blob is cached');
      }
    }
    // cached now: served without another upstream GET
    const gets = relay.count(/^GET .*\/blobs\//);
    for (const blob of index.children[0].blobs) await bytes(await fetch(`${mirror.url}/v2/library/multi/blobs/${blob.digest}`));
    assert.equal(relay.count(/^GET .*\/blobs\//), gets);
  });

  it('answers 404 MANIFEST_UNKNOWN and BLOB_UNKNOWN for what the upstream does not have', async () => {
    const manifest = await fetch(`${mirror.url}/v2/library/app/manifests/nope`);
    assert.equal(manifest.status, 404);
    assert.deepEqual(await errorCodes(manifest), ['MANIFEST_UNKNOWN']);
    const blob = await fetch(`${mirror.url}/v2/library/app/blobs/${randomBlob(10).digest}`);
    assert.equal(blob.status, 404);
    assert.deepEqual(await errorCodes(blob), ['BLOB_UNKNOWN']);
  });

  it('serves a range of a blob it does not hold from the upstream', async () => {
    const blob = single.blobs[2];
    const res = await fetch(`${mirror.url}/v2/library/app/blobs/${blob.digest}`, { headers: { range: 'bytes=10-99' } });
    assert.equal(res.status, 206);
    assert.deepEqual(Buffer.from(await res.arrayBuffer()), blob.data.subarray(10, 100));
    assert.ok(!existsSync(blobFile(mirror.root!, blob.digest)), 'a range is not cached');
  });

  it('lists the upstream tags, and the catalog of what it holds', async () => {
    await pushImageOK(pusher.url, 'library/app', single, 'v2');
    const tags = await fetch(`${mirror.url}/v2/library/app/tags/list`);
    assert.deepEqual(await tags.json(), { name: 'library/app', tags: ['v1', 'v2'] });
    const catalog = (await (await fetch(`${mirror.url}/v2/_catalog`)).json()) as { repositories: string[] };
    assert.deepEqual(catalog.repositories, ['library/multi']);
  });

  it('answers every write with 405 UNSUPPORTED, saying it is a pull-through cache', async () => {
    const upload = `${mirror.url}/v2/library/app/blobs/uploads/5b1c9d3e-0000-4000-8000-000000000000`;
    const writes: [string, string, BodyInit?][] = [
      ['PUT', `${mirror.url}/v2/library/app/manifests/v9`, single.body],
      ['DELETE', `${mirror.url}/v2/library/app/manifests/${single.digest}`],
      ['DELETE', `${mirror.url}/v2/library/app/blobs/${single.blobs[0].digest}`],
      ['POST', `${mirror.url}/v2/library/app/blobs/uploads/`],
      ['PATCH', upload, 'x'],
      ['PUT', `${upload}?digest=${single.blobs[0].digest}`],
      ['DELETE', upload],
    ];
    for (const [method, url, body] of writes) {
      const res = await fetch(url, { method, body, headers: { 'content-type': single.mediaType } });
      assert.equal(res.status, 405, `${method} ${url}`);
      const error = ((await res.json()) as { errors: { code: string; message: string }[] }).errors[0];
      assert.equal(error.code, 'UNSUPPORTED');
      assert.match(error.message, /pull-through cache/);
    }
  });

  it('pulls through with skopeo, the bytes of the upstream', { skip: !toolAvailable('skopeo') && 'skopeo is not installed' }, async () => {
    const out = join(dir, 'skopeo-pull');
    await run('skopeo', ['copy', '--src-tls-verify=false', `docker://${new URL(mirror.url).host}/library/app:v1`, `dir:${out}`], { timeout: 120_000 });
    assert.deepEqual(await readFile(join(out, 'manifest.json')), single.body);
    for (const blob of single.blobs) assert.deepEqual(await readFile(join(out, blob.digest.slice(7))), blob.data);
  });

  it('fetches a 100 MiB blob pulled by twenty clients at once from the upstream once, and all get its bytes', async () => {
    const blob = randomBlob(100 * MiB);
    assert.equal((await pushBlob(pusher.url, 'library/big', blob.data, blob.digest)).status, 201);
    const digests = await Promise.all(Array.from({ length: 20 }, () => fetch(`${mirror.url}/v2/library/big/blobs/${blob.digest}`).then(streamedDigest)));
    assert.deepEqual(new Set(digests), new Set([blob.digest]));
    assert.equal(relay.count(new RegExp(`^GET /v2/library/big/blobs/${blob.digest}$`)), 1, 'one upstream GET');
    assert.equal(sha256(await readFile(blobFile(mirror.root!, blob.digest))), blob.digest, 'cached whole');
  });

  it('fetches a manifest pulled by ten clients at once from the upstream once', async () => {
    const image = await pushImageOK(pusher.url, 'library/popular', buildImage('docker-v2', { layers: 1, layerSize: 1000 }), 'v1');
    const pulls = await Promise.all(Array.from({ length: 10 }, () => fetch(`${mirror.url}/v2/library/popular/manifests/v1`, { headers: { accept: image.mediaType } }).then(bytes)));
    for (const pulled of pulls) assert.ok(pulled.equals(image.body));
    assert.equal(relay.count(/^GET \/v2\/library\/popular\/manifests\//), 1, 'one upstream GET');
  });

  it('keeps fetching for the others when a client disconnects', async () => {
    const blob = randomBlob(8 * MiB);
    assert.equal((await pushBlob(pusher.url, 'library/leaver', blob.data, blob.digest)).status, 201);
    const url = `${mirror.url}/v2/library/leaver/blobs/${blob.digest}`;
    const leaving = new AbortController();
    const leaver = fetch(url, { signal: leaving.signal }).then(async (res) => {
      const reader = res.body!.getReader();
      await reader.read();
      leaving.abort();
    });
    const stayer = fetch(url).then(bytes);
    await leaver.catch(() => undefined);
    assert.ok((await stayer).equals(blob.data));
    assert.equal(relay.count(new RegExp(`^GET /v2/library/leaver/blobs/${blob.digest}$`)), 1);
    assert.ok(existsSync(blobFile(mirror.root!, blob.digest)));
  });

  it('leaves nothing under blobs/ when the upstream dies in the middle of a blob, and the next pull succeeds', async () => {
    const blob = randomBlob(6 * MiB);
    assert.equal((await pushBlob(pusher.url, 'library/cut', blob.data, blob.digest)).status, 201);
    relay.cutNextResponseAfter(3 * MiB); // past the first batch handed on (blob-fetch.ts): the client has bytes when it breaks
    const url = `${mirror.url}/v2/library/cut/blobs/${blob.digest}`;
    await assert.rejects(fetch(url).then((res) => res.arrayBuffer()));
    await new Promise((resolve) => setTimeout(resolve, 200)); // the fetch's clean-up
    assert.ok(!existsSync(blobFile(mirror.root!, blob.digest)), 'no blob from a broken fetch');
    assert.ok((await bytes(await fetch(url))).equals(blob.data));
    assert.ok(existsSync(blobFile(mirror.root!, blob.digest)));
  });

  it('follows a tag moved upstream, and serves the cached one while the upstream is down', async () => {
    const first = await pushImageOK(pusher.url, 'library/moving', buildImage('oci-manifest'), 'stable');
    const url = `${mirror.url}/v2/library/moving/manifests/stable`;
    assert.equal((await fetch(url)).headers.get('docker-content-digest'), first.digest);
    const second = await pushImageOK(pusher.url, 'library/moving', buildImage('oci-manifest'), 'stable');
    relay.setDown(true);
    try {
      const cached = await fetch(url);
      assert.deepEqual(await bytes(cached), first.body);
    } finally {
      relay.setDown(false);
    }
    const moved = await fetch(url);
    assert.equal(moved.headers.get('docker-content-digest'), second.digest);
    assert.deepEqual(await bytes(moved), second.body);
    // and the cache now holds the new one
    relay.setDown(true);
    try {
      assert.equal((await fetch(url)).headers.get('docker-content-digest'), second.digest);
    } finally {
      relay.setDown(false);
    }
  });

  it('serves cached images while the upstream is stopped, says what is missing, and recovers when it returns', async () => {
    const uncached = await pushImageOK(pusher.url, 'library/later', buildImage('oci-manifest'), 'v1');
    await upstream.stop();
    // cached: the index by tag, a child and its blobs
    assert.deepEqual(await bytes(await fetch(`${mirror.url}/v2/library/multi/manifests/latest`)), index.body);
    const child = index.children[1];
    assert.deepEqual(await bytes(await fetch(`${mirror.url}/v2/library/multi/manifests/${child.digest}`)), child.body);
    for (const blob of child.blobs) assert.deepEqual(await bytes(await fetch(`${mirror.url}/v2/library/multi/blobs/${blob.digest}`)), blob.data);
    const tags = await fetch(`${mirror.url}/v2/library/multi/tags/list`);
    assert.deepEqual(await tags.json(), { name: 'library/multi', tags: ['latest'] });
    // not cached: a clear error
    const missing = await fetch(`${mirror.url}/v2/library/later/manifests/v1`);
    assert.equal(missing.status, 503);
    const error = ((await missing.json()) as { errors: { code: string; message: string }[] }).errors[0];
    assert.equal(error.code, 'UNAVAILABLE');
    assert.match(error.message, /not in the cache and the upstream registry .* is unavailable/);
    const missingBlob = await fetch(`${mirror.url}/v2/library/later/blobs/${uncached.blobs[0].digest}`);
    assert.equal(missingBlob.status, 503);
    await missingBlob.body?.cancel();

    upstream = await startUpstream();
    relay.target = upstream.url;
    assert.deepEqual(await bytes(await fetch(`${mirror.url}/v2/library/later/manifests/v1`)), uncached.body);
    assert.deepEqual(await bytes(await fetch(`${mirror.url}/v2/library/later/blobs/${uncached.blobs[0].digest}`)), uncached.blobs[0].data);
  });

  it('says the upstream refused when the credentials are wrong, without showing them', async () => {
    const wrong = await startBerth({ proxy: { remoteurl: relay.url, username: USER, password: 'wrong-password' } });
    try {
      for (const path of ['library/app/manifests/v1', `library/app/blobs/${single.blobs[0].digest}`]) {
        const res = await fetch(`${wrong.url}/v2/${path}`);
        assert.equal(res.status, 502, path);
        const text = await res.text();
        assert.match(text, /refused/);
        assert.doesNotMatch(text, /wrong-password|mirror/);
      }
    } finally {
      await wrong.stop();
    }
  });
});
