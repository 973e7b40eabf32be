/**
 * Where a federated issuer's keys come from: its JWKS URL, fetched once and again when a token
 * names an unknown key (rotation), at most once per 30 s of the injected clock and once for many
 * concurrent requests; a JWKS file; a JWKS that cannot be fetched (503, not a refusal).
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { KeysUnavailable, RemoteKeys } from '../../src/auth/federation-keys.js';
import { basic, writeHtpasswd } from '../helpers/auth.js';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { JwtIssuer, makeKey, stopFixture } from '../helpers/jwt-issuer.js';
import { ManualClock } from '../helpers/manual-clock.js';

const CLAIMS = { repository: 'acme/app' };

function block(issuer: JwtIssuer, keys: { jwksuri: string } | { jwks: string }) {
  return [{ name: 'ci', issuer: issuer.iss, ...keys, audience: 'berth', rules: [{ claims: { repository: 'acme/*' }, repositories: ['acme/**'], actions: ['pull'] }] }];
}

async function message(res: Response): Promise<string> {
  return ((await res.json()) as { errors: { message: string }[] }).errors[0].message;
}

describe('federated keys from a JWKS URL', () => {
  const clock = new ManualClock();
  const now = () => Math.floor(clock.now() / 1000);
  let issuer: JwtIssuer;
  let registry: TestRegistry;
  let dir: string;
  const get = (token: string) => fetch(`${registry.url}/v2/acme/app/tags/list`, { headers: { authorization: basic('ci', token) } });

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'berth-federation-keys-'));
    issuer = await JwtIssuer.start();
    await writeHtpasswd(join(dir, 'htpasswd'), {});
    registry = await startBerth({ auth: { htpasswd: { path: join(dir, 'htpasswd') }, federation: block(issuer, { jwksuri: issuer.jwksUrl }), failedlogins: { burst: 0 } } }, { clock });
  });
  after(() => stopFixture(registry, issuer, dir));

  it('fetches the JWKS on first use, picks up a rotated key with one refetch, and rate-limits refetches', async () => {
    assert.equal(issuer.fetches, 0);
    assert.equal((await get(await issuer.sign({ sub: 'a', iat: now(), claims: CLAIMS }))).status, 404); // accepted; no such repository
    assert.equal(issuer.fetches, 1);
    assert.equal((await get(await issuer.sign({ sub: 'a', iat: now(), claims: CLAIMS }))).status, 404);
    assert.equal(issuer.fetches, 1, 'a known key needs no fetch');

    const rotated = await makeKey('key-2');
    issuer.published = [issuer.key, rotated];
    // just fetched: an unknown kid is refused without asking again (a forged kid costs the issuer nothing)
    const early = await get(await issuer.sign({ sub: 'a', iat: now(), key: rotated, claims: CLAIMS }));
    assert.equal(early.status, 401);
    assert.match(await message(early), /unknown key: no key with kid "key-2"/);
    assert.equal(issuer.fetches, 1);

    await clock.advance(30_000);
    assert.equal((await get(await issuer.sign({ sub: 'a', iat: now(), key: rotated, claims: CLAIMS }))).status, 404, 'the rotated key is picked up');
    assert.equal(issuer.fetches, 2);

    const forged = await makeKey('key-3');
    const refused = await get(await issuer.sign({ sub: 'a', iat: now(), key: forged, claims: CLAIMS }));
    assert.equal(refused.status, 401);
    assert.match(await message(refused), /^federated token refused: unknown key: no key with kid "key-3" at http:\/\/127\.0\.0\.1:\d+\/jwks of issuer "ci"$/);
    assert.equal(issuer.fetches, 2, 'no second refetch within 30 s');

    await clock.advance(30_000);
    const tokens = await Promise.all(Array.from({ length: 5 }, () => issuer.sign({ sub: 'a', iat: now(), key: forged, claims: CLAIMS })));
    const answers = await Promise.all(tokens.map(get));
    assert.deepEqual(answers.map((r) => r.status), [401, 401, 401, 401, 401]);
    assert.match(await message(answers[0]), /\(fetched again just now\) of issuer "ci"$/);
    assert.equal(issuer.fetches, 3, 'concurrent unknown kids share one fetch');
  });

  it('fetches the JWKS again once it is 10 minutes old', async () => {
    const before = issuer.fetches;
    await clock.advance(10 * 60_000);
    assert.equal((await get(await issuer.sign({ sub: 'a', iat: now(), claims: CLAIMS }))).status, 404);
    assert.equal(issuer.fetches, before + 1);
  });
});

describe('federated keys from a JWKS file', () => {
  const clock = new ManualClock();
  const now = () => Math.floor(clock.now() / 1000);
  let issuer: JwtIssuer;
  let registry: TestRegistry;
  let dir: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'berth-federation-file-'));
    issuer = await JwtIssuer.start('https://kubernetes.default.svc.cluster.local');
    await writeFile(join(dir, 'jwks.json'), issuer.jwks());
    await writeHtpasswd(join(dir, 'htpasswd'), {});
    registry = await startBerth({ auth: { htpasswd: { path: join(dir, 'htpasswd') }, federation: block(issuer, { jwks: join(dir, 'jwks.json') }), failedlogins: { burst: 0 } } }, { clock });
  });
  after(() => stopFixture(registry, issuer, dir));

  it('verifies with the keys of the file and never fetches', async () => {
    const ok = await fetch(`${registry.url}/v2/acme/app/tags/list`, { headers: { authorization: basic('ci', await issuer.sign({ sub: 'a', iat: now(), claims: CLAIMS })) } });
    assert.equal(ok.status, 404);
    const other = await makeKey('key-9');
    const res = await fetch(`${registry.url}/v2/acme/app/tags/list`, { headers: { authorization: basic('ci', await issuer.sign({ sub: 'a', iat: now(), key: other, claims: CLAIMS })) } });
    assert.equal(res.status, 401);
    assert.match(await message(res), /^federated token refused: unknown key: no key with kid "key-9" in the JWKS file .*jwks\.json of issuer "ci"$/);
    assert.equal(issuer.fetches, 0);
  });
});

describe('federated keys that cannot be fetched', () => {
  it('answers 503 UNAVAILABLE (the token may be fine) and counts no failed login', async () => {
    const clock = new ManualClock();
    const dir = await mkdtemp(join(tmpdir(), 'berth-federation-down-'));
    const issuer = await JwtIssuer.start();
    let registry: TestRegistry | undefined;
    try {
      await writeHtpasswd(join(dir, 'htpasswd'), {});
      const gone = `${issuer.jwksUrl}-moved`; // the issuer answers 404 there
      registry = await startBerth({ auth: { htpasswd: { path: join(dir, 'htpasswd') }, federation: block(issuer, { jwksuri: gone }), failedlogins: { burst: 1, every: '1m' } } }, { clock });
      const url = registry.url;
      const token = await issuer.sign({ sub: 'a', iat: Math.floor(clock.now() / 1000), claims: CLAIMS });
      for (let i = 0; i < 2; i++) {
        const res = await fetch(`${url}/v2/acme/app/tags/list`, { headers: { authorization: basic('ci', token) } });
        assert.equal(res.status, 503);
        assert.match(await message(res), /^issuer "ci": the keys cannot be fetched from http:\/\/127\.0\.0\.1:\d+\/jwks-moved: HTTP 404; try again later$/);
      }
    } finally {
      try {
        await registry?.stop();
      } finally {
        await issuer.stop();
        await rm(dir, { recursive: true, force: true });
      }
    }
  });
});

describe('the JWKS fetch', () => {
  it('follows no redirect, and says where it leads', async () => {
    const issuer = await JwtIssuer.start();
    try {
      const errors: string[] = [];
      const moved = issuer.jwksUrl.replace(/\/jwks$/, '/moved');
      const keys = new RemoteKeys(moved, new ManualClock(), (message) => errors.push(message));
      await assert.rejects(keys.keyFor({ alg: 'RS256', kid: 'key-1' }, { payload: '', signature: '' }), (err: Error) => {
        assert.ok(err instanceof KeysUnavailable);
        assert.equal(err.message, `the keys cannot be fetched from ${moved}: HTTP 302, a redirect to /jwks: configure that URL as jwksuri`);
        return true;
      });
      assert.equal(issuer.fetches, 0);
      assert.deepEqual(errors, [`the keys of ${moved} cannot be fetched: HTTP 302, a redirect to /jwks: configure that URL as jwksuri`]);
    } finally {
      await issuer.stop();
    }
  });
});
