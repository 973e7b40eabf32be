/**
 * htpasswd authentication and auth.access against the real server: every endpoint of section 4
 * without credentials, with bad ones, with too little permission and allowed; anonymous access;
 * the catalog filtered by pull; mounts with and without pull on the source.
 */
import assert from 'node:assert/strict';
import { rm, utimes } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { basic, writeHtpasswd } from '../helpers/auth.js';
import { call, describeEndpoint, endpoints, seededRoot } from '../helpers/auth-endpoints.js';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { errorCodes, rawRequest, sha256 } from '../helpers/blobs.js';
import type { Image } from '../helpers/images.js';
import { ManualClock } from '../helpers/manual-clock.js';

const USERS = { admin: 'admin-pw', writer: 'writer-pw', reader: 'reader-pw' };
const ACCESS = {
  '**': { admin: ['pull', 'push', 'delete'] },
  'team/*': { admin: ['pull', 'push', 'delete'], '*': ['pull'], writer: ['push'] },
  'public/*': { anonymous: ['pull'], '*': ['pull'] },
};
const as = (user: keyof typeof USERS) => basic(user, USERS[user]);

async function assertUnauthorized(res: Response, what: string): Promise<void> {
  assert.equal(res.status, 401, what);
  assert.equal(res.headers.get('www-authenticate'), 'Basic realm="berth-test"', what);
  assert.equal(res.headers.get('registry-distribution-api-version'), 'registry/2.0', what);
  if (res.headers.get('content-length') !== '0' && (await res.clone().text()) !== '') {
    assert.deepEqual(await errorCodes(res), ['UNAUTHORIZED'], what);
  }
}

describe('htpasswd + auth.access', () => {
  let registry: TestRegistry;
  let root: string;
  let image: Image;
  const clock = new ManualClock();

  before(async () => {
    ({ root, image } = await seededRoot(['team/app', 'public/base', 'private/x']));
    await writeHtpasswd(join(root, 'htpasswd'), USERS);
    registry = await startBerth({ auth: { htpasswd: { realm: 'berth-test', path: join(root, 'htpasswd') }, access: ACCESS, failedlogins: { burst: 0 } } }, { root, clock }); // wrong passwords on purpose, every endpoint: login-guard.test.ts covers the limit
  });
  after(async () => {
    await registry?.stop();
    if (root) await rm(root, { recursive: true, force: true });
  });

  it('answers every endpoint without credentials with 401, the Basic challenge and a JSON body', async () => {
    for (const e of endpoints('team/app', image)) {
      const res = await call(registry.url, e);
      await assertUnauthorized(res, describeEndpoint(e));
      if (e.method !== 'HEAD') assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
    }
  });

  it('answers every endpoint with a wrong password, an unknown user or a malformed header with 401', async () => {
    for (const e of endpoints('team/app', image)) {
      for (const header of [basic('admin', 'wrong'), basic('nobody', 'admin-pw'), 'Basic !!!', 'Bearer abc']) {
        await assertUnauthorized(await call(registry.url, e, header), `${describeEndpoint(e)} with ${header}`);
      }
    }
  });

  it('answers 403 DENIED where the user lacks the action, and lets the request through where not', async () => {
    const allowed: Record<string, Set<string | undefined>> = {
      reader: new Set([undefined, 'catalog', 'pull']),
      writer: new Set([undefined, 'catalog', 'pull', 'push']),
      admin: new Set([undefined, 'catalog', 'pull', 'push', 'delete']),
    };
    for (const user of ['reader', 'writer', 'admin'] as const) {
      for (const e of endpoints('team/app', image)) {
        const res = await call(registry.url, e, as(user));
        const what = `${user}: ${describeEndpoint(e)} -> ${res.status}`;
        if (allowed[user].has(e.needs)) {
          assert.ok(res.status !== 401 && res.status !== 403, what);
        } else {
          assert.equal(res.status, 403, what);
          assert.deepEqual(await errorCodes(res), ['DENIED'], what);
          assert.equal(res.headers.get('www-authenticate'), null, what);
        }
        await res.arrayBuffer().catch(() => undefined);
      }
    }
  });

  it('the longest glob decides: admin has only team/*\'s grants there, everything elsewhere', async () => {
    assert.equal((await fetch(`${registry.url}/v2/private/x/manifests/latest`, { headers: { authorization: as('admin') } })).status, 200);
    const denied = await fetch(`${registry.url}/v2/private/x/manifests/latest`, { headers: { authorization: as('reader') } });
    assert.equal(denied.status, 403);
  });

  it('lets anonymous requests pull where `anonymous` may, and asks for credentials for the rest', async () => {
    const res = await fetch(`${registry.url}/v2/public/base/manifests/latest`);
    assert.equal(res.status, 200);
    assert.equal(Buffer.from(await res.arrayBuffer()).equals(image.body), true);
    await assertUnauthorized(await fetch(`${registry.url}/v2/public/base/blobs/uploads/`, { method: 'POST' }), 'anonymous push');
    await assertUnauthorized(await fetch(`${registry.url}/v2/`), 'GET /v2/ always needs authentication');
    await assertUnauthorized(await fetch(`${registry.url}/v2/_catalog`), 'catalog');
  });

  it('refuses name tricks with 400 NAME_INVALID before any access decision, never serving another repository', async () => {
    const tricks = ['/v2/team/../private/x/manifests/latest', '/v2/team/..%2Fprivate/x/manifests/latest', '/v2/team%2F..%2Fprivate%2Fx/manifests/latest', '/v2/team/%2e%2e/private/x/manifests/latest', '/v2/public/base/../../private/x/tags/list'];
    for (const path of tricks) {
      for (const headers of [{}, { authorization: as('reader') }] as Record<string, string>[]) {
        const res = await rawRequest(registry.url, 'GET', path, headers);
        assert.equal(res.status, 400, `${path} -> ${res.status}`);
        assert.equal(JSON.parse(res.body).errors[0].code, 'NAME_INVALID', path);
      }
    }
  });

  it('answers GET /v2/ with 200 for any valid user', async () => {
    for (const user of ['reader', 'writer', 'admin'] as const) {
      assert.equal((await fetch(`${registry.url}/v2/`, { headers: { authorization: as(user) } })).status, 200);
    }
  });

  it('lists in the catalog only the repositories the caller may pull, paging over the hidden ones', async () => {
    const list = async (user: keyof typeof USERS, query = '') =>
      (await fetch(`${registry.url}/v2/_catalog${query}`, { headers: { authorization: as(user) } })).json() as Promise<{ repositories: string[] }>;
    assert.deepEqual((await list('admin')).repositories, ['private/x', 'public/base', 'team/app']);
    assert.deepEqual((await list('reader')).repositories, ['public/base', 'team/app']);
    const page = await fetch(`${registry.url}/v2/_catalog?n=1`, { headers: { authorization: as('reader') } });
    assert.deepEqual(((await page.json()) as { repositories: string[] }).repositories, ['public/base']);
    assert.match(page.headers.get('link') ?? '', /last=public%2Fbase|last=public\/base/);
    const second = await fetch(`${registry.url}/v2/_catalog?n=1&last=public/base`, { headers: { authorization: as('reader') } });
    assert.deepEqual(((await second.json()) as { repositories: string[] }).repositories, ['team/app']);
    assert.equal(second.headers.get('link'), null);
  });

  it('mounts a blob when the caller may pull the source, and starts a plain upload (202) when not', async () => {
    const layer = image.blobs[image.blobs.length - 1].digest;
    const mount = (from: string, user: keyof typeof USERS) =>
      fetch(`${registry.url}/v2/team/new/blobs/uploads/?mount=${layer}&from=${from}`, { method: 'POST', headers: { authorization: as(user) } });
    const mounted = await mount('team/app', 'writer');
    assert.equal(mounted.status, 201);
    assert.equal(mounted.headers.get('registry-content-digest') ?? mounted.headers.get('docker-content-digest'), layer);
    const fallback = await mount('private/x', 'writer');
    assert.equal(fallback.status, 202, 'no pull on private/x: a plain upload, the blob stays hidden');
    assert.ok(fallback.headers.get('location'));
    const admin = await fetch(`${registry.url}/v2/private/y/blobs/uploads/?mount=${layer}&from=private/x`, { method: 'POST', headers: { authorization: as('admin') } });
    assert.equal(admin.status, 201);
    const noPush = await mount('team/app', 'reader');
    assert.equal(noPush.status, 403, 'the target still needs push');
  });

  it('runs a whole push with credentials: upload, chunk, completion, manifest', async () => {
    const data = Buffer.from('hello, authenticated world');
    const headers = { authorization: as('writer') };
    const start = await fetch(`${registry.url}/v2/team/pushed/blobs/uploads/`, { method: 'POST', headers });
    assert.equal(start.status, 202);
    const location = new URL(start.headers.get('location')!, registry.url);
    const patch = await fetch(location, { method: 'PATCH', body: data, headers });
    assert.equal(patch.status, 202);
    const done = new URL(patch.headers.get('location')!, registry.url);
    done.searchParams.append('digest', sha256(data));
    const put = await fetch(done, { method: 'PUT', headers });
    assert.equal(put.status, 201);
    assert.equal((await fetch(`${registry.url}/v2/team/pushed/blobs/${sha256(data)}`, { headers: { authorization: as('reader') } })).status, 200);
  });

  it('picks up a changed htpasswd file without a restart', async () => {
    await writeHtpasswd(join(root, 'htpasswd'), { ...USERS, reader: 'new-pw' });
    await utimes(join(root, 'htpasswd'), new Date(), new Date(Date.now() + 60_000));
    await clock.advance(1000); // the file is checked at most once a second
    assert.equal((await fetch(`${registry.url}/v2/`, { headers: { authorization: basic('reader', 'new-pw') } })).status, 200);
    assert.equal((await fetch(`${registry.url}/v2/`, { headers: { authorization: as('reader') } })).status, 401);
  });
});

describe('htpasswd without auth.access', () => {
  let registry: TestRegistry;
  let root: string;
  before(async () => {
    ({ root } = await seededRoot(['any/repo']));
    await writeHtpasswd(join(root, 'htpasswd'), USERS);
    registry = await startBerth({ auth: { htpasswd: { realm: 'berth-test', path: join(root, 'htpasswd') } } }, { root });
  });
  after(async () => {
    await registry?.stop();
    if (root) await rm(root, { recursive: true, force: true });
  });

  it('lets every authenticated user do everything and anonymous nothing', async () => {
    const headers = { authorization: as('reader') };
    assert.equal((await fetch(`${registry.url}/v2/any/repo/manifests/latest`, { headers })).status, 200);
    assert.equal((await fetch(`${registry.url}/v2/any/repo/blobs/uploads/`, { method: 'POST', headers })).status, 202);
    assert.equal((await fetch(`${registry.url}/v2/any/repo/manifests/sha256:${'0'.repeat(64)}`, { method: 'DELETE', headers })).status, 404);
    assert.deepEqual(((await (await fetch(`${registry.url}/v2/_catalog`, { headers })).json()) as { repositories: string[] }).repositories, ['any/repo']);
    await assertUnauthorized(await fetch(`${registry.url}/v2/any/repo/manifests/latest`), 'anonymous');
  });
});
