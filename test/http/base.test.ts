import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { basic, writeHtpasswd } from '../helpers/auth.js';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { errorCodes, rawRequest } from '../helpers/blobs.js';

describe('GET /v2/ and the edge', () => {
  let registry: TestRegistry;
  before(async () => {
    registry = await startBerth({ http: { headers: { 'X-Content-Type-Options': ['nosniff'] } } });
  });
  after(() => registry.stop());

  it('answers 200 with the API version header and its Docker twin', async () => {
    const res = await fetch(`${registry.url}/v2/`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('registry-distribution-api-version'), 'registry/2.0');
    assert.equal(res.headers.get('docker-distribution-api-version'), 'registry/2.0');
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
    assert.deepEqual(await res.json(), {});
  });

  it('answers HEAD /v2/ and /v2 without the slash', async () => {
    assert.equal((await fetch(`${registry.url}/v2/`, { method: 'HEAD' })).status, 200);
    assert.equal((await fetch(`${registry.url}/v2`)).status, 200);
  });

  it('echoes a given X-Request-Id and makes one up otherwise', async () => {
    const given = await fetch(`${registry.url}/v2/`, { headers: { 'x-request-id': 'abc-123' } });
    assert.equal(given.headers.get('x-request-id'), 'abc-123');
    const made = await fetch(`${registry.url}/v2/`);
    assert.match(made.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
  });

  it('sends the configured http.headers on every response', async () => {
    const res = await fetch(`${registry.url}/v2/nope/blobs/sha256:${'a'.repeat(64)}`);
    assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
  });

  it('answers unknown routes with 404 and a JSON error body', async () => {
    for (const path of ['/v1/', '/v2/foo/bar', '/v2/foo/blobs', '/v2/foo/manifests/']) {
      const res = await fetch(`${registry.url}${path}`);
      assert.equal(res.status, 404, path);
      assert.deepEqual(await errorCodes(res), ['NOT_FOUND'], path);
    }
  });

  it('answers / with 200 and no body, as Distribution does for load balancers', async () => {
    const res = await fetch(`${registry.url}/`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('cache-control'), 'no-cache');
    assert.equal(await res.text(), '');
  });

  it('answers a method a route does not support with 405 UNSUPPORTED and Allow', async () => {
    const res = await fetch(`${registry.url}/v2/foo/blobs/sha256:${'a'.repeat(64)}`, { method: 'POST' });
    assert.equal(res.status, 405);
    assert.equal(res.headers.get('allow'), 'GET, HEAD, DELETE');
    assert.deepEqual(await errorCodes(res), ['UNSUPPORTED']);
    const put = await fetch(`${registry.url}/v2/`, { method: 'PUT' });
    assert.equal(put.status, 405);
  });

  it('refuses invalid repository names with 400 NAME_INVALID, not a router 404', async () => {
    const digest = `sha256:${'a'.repeat(64)}`;
    // sent raw: fetch would resolve the dot segments before they reach the server
    const bad = ['Foo', 'foo/Bar', 'foo//bar', 'foo-', '-foo', 'foo..bar', 'e__f', 'a'.repeat(256), 'foo%2Fbar', '..', 'foo/./bar', 'foo/../bar'];
    for (const name of bad) {
      const res = await rawRequest(registry.url, 'GET', `/v2/${name}/blobs/${digest}`);
      assert.equal(res.status, 400, name);
      const body = JSON.parse(res.body) as { errors: { code: string; message: string }[] };
      assert.equal(body.errors[0].code, 'NAME_INVALID', name);
      assert.ok(body.errors[0].message.includes('repository name'));
    }
  });

  it('accepts names at the limits of 2.1', async () => {
    const digest = `sha256:${'a'.repeat(64)}`;
    for (const name of ['a', 'a/b', 'a.b_c-d/e_f', `${'a'.repeat(127)}/${'b'.repeat(127)}`]) {
      const res = await fetch(`${registry.url}/v2/${name}/blobs/${digest}`);
      assert.equal(res.status, 404, name);
      assert.deepEqual(await errorCodes(res), ['BLOB_UNKNOWN'], name);
    }
  });
});

describe('the API under http.prefix (issue 32)', () => {
  let registry: TestRegistry;
  before(async () => {
    registry = await startBerth({ http: { prefix: '/registry/' } }, { driver: 'inmemory' });
  });
  after(() => registry.stop());

  it('answers only under the prefix: /v2/ and every API path without it get 404 NOT_FOUND, as Distribution answers 404', async () => {
    assert.equal((await fetch(`${registry.url}/registry/v2/`)).status, 200);
    assert.equal((await fetch(`${registry.url}/registry/v2`)).status, 200);
    for (const [method, path] of [['GET', '/v2/'], ['HEAD', '/v2/'], ['GET', '/v2'], ['GET', '/v2/_catalog'], ['GET', '/v2/lib/x/tags/list'], ['POST', '/v2/lib/x/blobs/uploads/'], ['GET', '/other/v2/']]) {
      const res = await fetch(`${registry.url}${path}`, { method });
      assert.equal(res.status, 404, `${method} ${path}`);
      if (method === 'HEAD') continue;
      const body = (await res.json()) as { errors: { code: string; message: string }[] };
      assert.equal(body.errors[0].code, 'NOT_FOUND');
      assert.match(body.errors[0].message, /lives under \/registry\/v2\//);
    }
    assert.equal((await fetch(`${registry.url}/registry/v2/lib/x/blobs/uploads/`, { method: 'POST' })).status, 202);
  });

  it('serves the web interface only under the prefix too; / keeps sending browsers there, and the probes stay', async () => {
    assert.equal((await fetch(`${registry.url}/registry/ui/api/repositories`)).status, 200);
    const outside = await fetch(`${registry.url}/ui/api/repositories`);
    assert.equal(outside.status, 404);
    assert.equal(((await outside.json()) as { errors: { code: string }[] }).errors[0].code, 'NOT_FOUND');
    const root = await fetch(`${registry.url}/`, { headers: { accept: 'text/html' }, redirect: 'manual' });
    assert.equal(root.status, 302);
    assert.equal(root.headers.get('location'), '/registry/ui/');
    for (const probe of ['/', '/livez', '/readyz']) assert.equal((await fetch(`${registry.url}${probe}`)).status, 200, probe);
  });
});

describe('the built-in token issuer under http.prefix (issue 32)', () => {
  let registry: TestRegistry;
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'berth-prefix-issuer-'));
    await writeHtpasswd(join(dir, 'htpasswd'), { ann: 'ann-pw' });
    await writeFile(join(dir, 'issuer.key'), generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }));
    registry = await startBerth(
      {
        http: { prefix: '/registry/' },
        auth: { htpasswd: { path: join(dir, 'htpasswd') }, token: { service: 'berth', autoredirect: true, issuer: { name: 'berth', enabled: true, signingkey: join(dir, 'issuer.key') } } },
      },
      { driver: 'inmemory' },
    );
  });
  after(async () => {
    await registry?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('answers tokens only under the prefix, where the challenge points', async () => {
    const challenge = (await fetch(`${registry.url}/registry/v2/`)).headers.get('www-authenticate') ?? '';
    assert.match(challenge, /realm="http:\/\/[^"]+\/registry\/auth\/token"/);
    const authorization = basic('ann', 'ann-pw');
    assert.equal((await fetch(`${registry.url}/registry/auth/token?service=berth`, { headers: { authorization } })).status, 200);
    const outside = await fetch(`${registry.url}/auth/token?service=berth`, { headers: { authorization } });
    assert.equal(outside.status, 404);
  });
});
