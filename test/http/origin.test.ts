/**
 * Cross-site requests (issue 26, item 4): a state-changing request from a page of another origin
 * is refused with 403 DENIED and changes nothing; registry clients (no Origin), the registry's own
 * pages (same origin) and origins the CORS policy allows (http.headers Access-Control-Allow-Origin)
 * are served. src/http/origin.ts.
 */
import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pushBlob, randomBlob } from '../helpers/blobs.js';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { buildImage, pushImageOK } from '../helpers/images.js';

const EVIL = 'http://evil.example';

/** the single error of a refusal: 403 DENIED naming the origin */
async function assertRefused(res: Response, origin = EVIL): Promise<void> {
  assert.equal(res.status, 403);
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
  const body = (await res.json()) as { errors: { code: string; message: string }[] };
  assert.equal(body.errors.length, 1);
  assert.equal(body.errors[0].code, 'DENIED');
  assert.ok(body.errors[0].message.includes(origin), body.errors[0].message);
}

async function uploadsOf(root: string, name: string): Promise<string[]> {
  return readdir(join(root, 'docker/registry/v2/repositories', name, '_uploads')).catch(() => []);
}

describe('cross-site requests (Origin)', () => {
  let berth: TestRegistry;

  before(async () => {
    berth = await startBerth({ storage: { delete: { enabled: true } } });
  });
  after(async () => {
    await berth?.stop();
  });

  it('refuses a POST, PATCH, PUT and DELETE from another origin with 403 DENIED, storing nothing', async () => {
    const { url } = berth;
    const { data, digest } = randomBlob(100);
    const image = await pushImageOK(url, 'lib/source', buildImage('oci-manifest'));
    const layer = image.blobs[image.blobs.length - 1].digest;
    // the attack: a simple cross-origin POST (text/plain) creating a blob, and one mounting a blob
    const evil = { origin: EVIL, 'content-type': 'text/plain' };
    await assertRefused(await fetch(`${url}/v2/lib/target/blobs/uploads/?digest=${digest}`, { method: 'POST', headers: evil, body: data }));
    await assertRefused(await fetch(`${url}/v2/lib/target/blobs/uploads/?mount=${layer}&from=lib/source`, { method: 'POST', headers: evil }));
    assert.equal((await fetch(`${url}/v2/lib/target/blobs/${digest}`, { method: 'HEAD' })).status, 404);
    assert.equal((await fetch(`${url}/v2/lib/target/blobs/${layer}`, { method: 'HEAD' })).status, 404);
    assert.deepEqual(await uploadsOf(berth.root!, 'lib/target'), []);

    // an upload a registry client started: the page cannot write to it or finish it
    const started = await fetch(`${url}/v2/lib/target/blobs/uploads/`, { method: 'POST' });
    assert.equal(started.status, 202);
    const location = new URL(started.headers.get('location')!, url);
    await assertRefused(await fetch(location, { method: 'PATCH', headers: evil, body: data }));
    const status = await fetch(location);
    assert.equal(status.status, 204);
    assert.equal(status.headers.get('range'), '0-0', 'nothing written');
    const finish = new URL(location);
    finish.searchParams.set('digest', digest);
    await assertRefused(await fetch(finish, { method: 'PUT', headers: evil, body: data }));
    assert.equal((await fetch(`${url}/v2/lib/target/blobs/${digest}`, { method: 'HEAD' })).status, 404);
    await assertRefused(await fetch(location, { method: 'DELETE', headers: evil }));
    assert.equal((await fetch(location)).status, 204, 'the upload is still there');

    // a manifest: neither overwritten by tag nor deleted
    await assertRefused(await fetch(`${url}/v2/lib/source/manifests/latest`, { method: 'PUT', headers: { origin: EVIL, 'content-type': image.mediaType }, body: image.body }));
    assert.equal((await fetch(`${url}/v2/lib/source/manifests/latest`, { method: 'HEAD' })).status, 404);
    await assertRefused(await fetch(`${url}/v2/lib/source/manifests/${image.digest}`, { method: 'DELETE', headers: { origin: EVIL } }));
    await assertRefused(await fetch(`${url}/v2/lib/source/blobs/${layer}`, { method: 'DELETE', headers: { origin: EVIL } }));
    assert.equal((await fetch(`${url}/v2/lib/source/manifests/${image.digest}`, { method: 'HEAD' })).status, 200);
    assert.equal((await fetch(`${url}/v2/lib/source/blobs/${layer}`, { method: 'HEAD' })).status, 200);
  });

  it('refuses the origins `null` and one on another port or scheme of the same host', async () => {
    const { url } = berth;
    const own = new URL(url);
    for (const origin of ['null', `http://${own.hostname}:${Number(own.port) + 1}`, `https://${own.host}`]) {
      await assertRefused(await fetch(`${url}/v2/lib/x/blobs/uploads/`, { method: 'POST', headers: { origin } }), origin);
    }
  });

  it('serves GET and HEAD from any origin, and every request without an Origin (registry clients)', async () => {
    const { url } = berth;
    assert.equal((await fetch(`${url}/v2/`, { headers: { origin: EVIL } })).status, 200);
    assert.equal((await fetch(`${url}/v2/_catalog`, { method: 'HEAD', headers: { origin: EVIL } })).status, 200);
    const { data } = randomBlob(50);
    assert.equal((await pushBlob(url, 'lib/plain', data)).status, 201);
  });

  it('serves the registry\'s own pages: the same origin, also behind a TLS proxy (X-Forwarded-Proto)', async () => {
    const { url } = berth;
    const image = await pushImageOK(url, 'lib/own', buildImage('oci-manifest'));
    const deleted = await fetch(`${url}/v2/lib/own/manifests/${image.digest}`, { method: 'DELETE', headers: { origin: url } });
    assert.equal(deleted.status, 202);
    const host = new URL(url).host;
    const proxied = await fetch(`${url}/v2/lib/own/blobs/uploads/`, { method: 'POST', headers: { origin: `https://${host}`, 'x-forwarded-proto': 'https' } });
    assert.equal(proxied.status, 202);
    const renamed = await fetch(`${url}/v2/lib/own/blobs/uploads/`, { method: 'POST', headers: { origin: 'https://registry.example', 'x-forwarded-proto': 'https', 'x-forwarded-host': 'registry.example' } });
    assert.equal(renamed.status, 202);
  });
});

describe('cross-site requests with a CORS policy (http.headers Access-Control-Allow-Origin)', () => {
  let berth: TestRegistry;

  before(async () => {
    berth = await startBerth({ http: { host: 'https://registry.example', headers: { 'Access-Control-Allow-Origin': ['https://ui.example'] } } });
  });
  after(async () => {
    await berth?.stop();
  });

  it('serves the allowed origin and the configured http.host, refuses another', async () => {
    const { url } = berth;
    const post = (origin: string) => fetch(`${url}/v2/lib/ui/blobs/uploads/`, { method: 'POST', headers: { origin } });
    assert.equal((await post('https://ui.example')).status, 202);
    assert.equal((await post('https://UI.example:443')).status, 202, 'compared as a browser does');
    assert.equal((await post('https://registry.example')).status, 202);
    assert.equal((await post(url)).status, 202, 'the address the request came to');
    await assertRefused(await post(EVIL));
    await assertRefused(await post('https://ui.example.evil.example'), 'https://ui.example.evil.example');
  });
});

describe('a CORS policy allowing any origin (`*`)', () => {
  let berth: TestRegistry;

  before(async () => {
    berth = await startBerth({ http: { headers: { 'access-control-allow-origin': ['*'] } } });
  });
  after(async () => {
    await berth?.stop();
  });

  it('serves every origin, as the operator asked', async () => {
    assert.equal((await fetch(`${berth.url}/v2/lib/any/blobs/uploads/`, { method: 'POST', headers: { origin: EVIL } })).status, 202);
  });
});
