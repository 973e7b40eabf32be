/**
 * Workload identity federation against the real server: a JWT of a local issuer (its JWKS served on
 * 127.0.0.1) as the Basic password pushes and pulls within its rule, and each wrong token is
 * refused with a 401 UNAUTHORIZED whose message says why; the built-in token issuer takes it too;
 * failed logins are limited; sign-ins reach the audit sink.
 */
import assert from 'node:assert/strict';
import { mkdtemp } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { decodeJwt } from 'jose';
import { pino } from 'pino';
import type { AuditRecord } from '../../src/audit/record.js';
import { Federation } from '../../src/auth/federation.js';
import { LoginGuard } from '../../src/auth/login-guard.js';
import { RegistryError } from '../../src/registry/errors.js';
import { basic, writeHtpasswd } from '../helpers/auth.js';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { sha256 } from '../helpers/blobs.js';
import { JwtIssuer, makeKey, type IssuerKey, stopFixture } from '../helpers/jwt-issuer.js';
import { ManualClock } from '../helpers/manual-clock.js';

const MAIN = { repository: 'acme/app', ref: 'refs/heads/main' };
const SUB = 'repo:acme/app:ref:refs/heads/main';

/** the federation block for `issuer`: main pushes to its own repository and shared/*, other refs only pull */
function federationBlock(issuer: JwtIssuer, keys: { jwksuri: string } | { jwks: string } = { jwksuri: issuer.jwksUrl }) {
  return [
    {
      name: 'ci',
      issuer: issuer.iss,
      ...keys,
      audience: 'berth',
      rules: [
        { claims: { repository: 'acme/*', ref: 'refs/heads/main' }, repositories: ['{{repository}}', 'shared/*'], actions: ['pull', 'push'] },
        { claims: { repository: 'acme/*' }, repositories: ['{{repository}}'], actions: ['pull'] },
      ],
    },
  ];
}

/** the first error of a registry error body */
async function firstError(res: Response): Promise<{ code: string; message: string }> {
  const body = (await res.json()) as { errors: { code: string; message: string }[] };
  return body.errors[0];
}

/** a blob and an OCI manifest pushed to `name` with `authorization`; the manifest PUT's response */
async function pushAs(base: string, name: string, authorization: string, tag: string): Promise<{ status: number; body: string; digest: string }> {
  const layer = Buffer.from(`layer of ${name}:${tag}`);
  const config = Buffer.from('{}');
  for (const blob of [layer, config]) {
    const start = await fetch(`${base}/v2/${name}/blobs/uploads/`, { method: 'POST', headers: { authorization } });
    if (start.status !== 202) return { status: start.status, body: await start.text(), digest: '' };
    const location = new URL(start.headers.get('location')!, base);
    location.searchParams.set('digest', sha256(blob));
    const put = await fetch(location, { method: 'PUT', body: blob, headers: { authorization, 'content-type': 'application/octet-stream' } });
    assert.equal(put.status, 201, await put.text());
  }
  const manifest = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.manifest.v1+json',
      config: { mediaType: 'application/vnd.oci.image.config.v1+json', digest: sha256(config), size: config.length },
      layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar', digest: sha256(layer), size: layer.length }],
    }),
  );
  const res = await fetch(`${base}/v2/${name}/manifests/${tag}`, { method: 'PUT', body: manifest, headers: { authorization, 'content-type': 'application/vnd.oci.image.manifest.v1+json' } });
  return { status: res.status, body: await res.text(), digest: sha256(manifest) };
}

describe('federated JWTs as Basic passwords (htpasswd)', () => {
  const clock = new ManualClock();
  const now = () => Math.floor(clock.now() / 1000);
  let issuer: JwtIssuer;
  let registry: TestRegistry;
  let dir: string;
  let stranger: IssuerKey;
  const jwt = (user = 'ci', token: string) => basic(user, token);

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'berth-federation-'));
    issuer = await JwtIssuer.start();
    stranger = await makeKey('key-2');
    await writeHtpasswd(join(dir, 'htpasswd'), { alice: 'alice-pw' });
    registry = await startBerth(
      { auth: { htpasswd: { realm: 'berth-test', path: join(dir, 'htpasswd') }, federation: federationBlock(issuer), failedlogins: { burst: 0 } } },
      { clock },
    );
  });
  after(() => stopFixture(registry, issuer, dir));

  it('pushes and pulls with a token of the main branch, within its rule only', async () => {
    const token = await issuer.sign({ sub: SUB, iat: now(), claims: MAIN });
    const pushed = await pushAs(registry.url, 'acme/app', jwt('anything', token), '1.0');
    assert.equal(pushed.status, 201, pushed.body);
    const pulled = await fetch(`${registry.url}/v2/acme/app/manifests/1.0`, { headers: { authorization: jwt('ci', token), accept: 'application/vnd.oci.image.manifest.v1+json' } });
    assert.equal(pulled.status, 200);
    assert.equal(pulled.headers.get('docker-content-digest'), pushed.digest);
    assert.equal((await pushAs(registry.url, 'shared/base', jwt('ci', token), '1')).status, 201);
    // outside the rule's globs: authenticated, so 403 DENIED naming the readable subject
    const elsewhere = await pushAs(registry.url, 'acme/other', jwt('ci', token), '1');
    assert.equal(elsewhere.status, 403);
    assert.match(elsewhere.body, /"code":"DENIED".*user \\"ci:repo:acme\/app:ref:refs\/heads\/main\\" may not/);
    // the catalog lists what the grant may pull
    const catalog = await fetch(`${registry.url}/v2/_catalog`, { headers: { authorization: jwt('ci', token) } });
    assert.deepEqual(((await catalog.json()) as { repositories: string[] }).repositories, ['acme/app', 'shared/base']);
  });

  it('gives a rule granting pull only a pull, and refuses its push with 403', async () => {
    const token = await issuer.sign({ sub: 'repo:acme/app:ref:refs/heads/dev', iat: now(), claims: { ...MAIN, ref: 'refs/heads/dev' } });
    const pulled = await fetch(`${registry.url}/v2/acme/app/tags/list`, { headers: { authorization: jwt('ci', token) } });
    assert.equal(pulled.status, 200);
    const push = await fetch(`${registry.url}/v2/acme/app/blobs/uploads/`, { method: 'POST', headers: { authorization: jwt('ci', token) } });
    assert.equal(push.status, 403);
    const error = await firstError(push);
    assert.equal(error.code, 'DENIED');
    assert.match(error.message, /ci:repo:acme\/app:ref:refs\/heads\/dev.*may not repository:acme\/app:push/);
  });

  it('refuses each wrong token with 401 UNAUTHORIZED and a message that says which', async () => {
    const iat = now();
    const cases: [string, Promise<string>, RegExp][] = [
      ['wrong audience', issuer.sign({ sub: SUB, iat, aud: 'someone-else', claims: MAIN }), /^federated token refused: wrong audience "someone-else": issuer "ci" must address its tokens to "berth"$/],
      ['expired', issuer.sign({ sub: SUB, iat: iat - 3600, claims: MAIN }), /^federated token refused: expired at 2025-12-31T23:05:00.000Z \(the registry's time is 2026-01-01T00:00:00.000Z\)$/],
      ['unknown key', issuer.sign({ sub: SUB, iat, key: stranger, claims: MAIN }), /^federated token refused: unknown key: no key with kid "key-2" at http:\/\/127\.0\.0\.1:\d+\/jwks of issuer "ci"$/],
      ['bad signature', issuer.sign({ sub: SUB, iat, key: stranger, kid: 'key-1', claims: MAIN }), /^federated token refused: bad signature: the token was not signed by the key it names \(kid "key-1"\)$/],
      ['unknown issuer', issuer.sign({ sub: SUB, iat, iss: 'https://ci.elsewhere.example', claims: MAIN }), /^federated token refused: unknown issuer "https:\/\/ci\.elsewhere\.example": auth\.federation trusts no issuer of that name$/],
      [
        'no rule matches',
        issuer.sign({ sub: 'repo:evil/app:ref:refs/heads/main', iat, claims: { repository: 'evil/app', ref: 'refs/heads/main' } }),
        /^federated token refused: no rule of issuer "ci" matches the token's claims: repository="evil\/app", ref="refs\/heads\/main"$/,
      ],
      ['no rule matches (claim absent)', issuer.sign({ sub: SUB, iat, claims: { ref: 'refs/heads/main' } }), /matches the token's claims: repository=\(absent\), ref="refs\/heads\/main"$/],
    ];
    for (const [what, signed, message] of cases) {
      const res = await fetch(`${registry.url}/v2/acme/app/tags/list`, { headers: { authorization: jwt('ci', await signed) } });
      assert.equal(res.status, 401, what);
      assert.equal(res.headers.get('www-authenticate'), 'Basic realm="berth-test"', what);
      const error = await firstError(res);
      assert.equal(error.code, 'UNAUTHORIZED', what);
      assert.match(error.message, message, what);
    }
  });

  it('refuses a token once the injected clock passes its exp plus the skew', async () => {
    const token = await issuer.sign({ sub: SUB, iat: now(), lifetime: 120, claims: MAIN });
    const get = () => fetch(`${registry.url}/v2/acme/app/tags/list`, { headers: { authorization: jwt('ci', token) } });
    assert.equal((await get()).status, 200);
    await clock.advance(120_000 + 59_000); // within the 60 s skew
    assert.equal((await get()).status, 200);
    await clock.advance(2_000);
    const res = await get();
    assert.equal(res.status, 401);
    assert.match((await firstError(res)).message, /expired at/);
  });

  it('leaves htpasswd passwords to htpasswd', async () => {
    assert.equal((await fetch(`${registry.url}/v2/`, { headers: { authorization: basic('alice', 'alice-pw') } })).status, 200);
    const wrong = await fetch(`${registry.url}/v2/`, { headers: { authorization: basic('alice', 'not.a.jwt') } });
    assert.equal(wrong.status, 401);
    assert.equal((await firstError(wrong)).message, 'invalid username or password');
  });
});

describe('federated JWTs at the built-in token issuer', () => {
  const clock = new ManualClock(Date.now());
  const now = () => Math.floor(clock.now() / 1000);
  let issuer: JwtIssuer;
  let registry: TestRegistry;
  let dir: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'berth-federation-token-'));
    issuer = await JwtIssuer.start();
    await writeHtpasswd(join(dir, 'htpasswd'), { alice: 'alice-pw' });
    const { generateKeyPairSync } = await import('node:crypto');
    const { writeFile } = await import('node:fs/promises');
    await writeFile(join(dir, 'issuer.key'), generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }));
    registry = await startBerth(
      {
        auth: {
          htpasswd: { path: join(dir, 'htpasswd') },
          token: { autoredirect: true, service: 'berth-test', issuer: { name: 'berth-test-issuer', enabled: true, signingkey: join(dir, 'issuer.key') } },
          federation: federationBlock(issuer),
          failedlogins: { burst: 0 },
        },
      },
      { clock },
    );
  });
  after(() => stopFixture(registry, issuer, dir));

  it('issues a token for what the rule grants (GET with Basic), and it pushes', async () => {
    const jwt = await issuer.sign({ sub: SUB, iat: now(), claims: MAIN });
    const url = `${registry.url}/auth/token?service=berth-test&offline_token=true&scope=repository:acme/app:pull,push,delete&scope=repository:other/x:pull&scope=registry:catalog:*`;
    const res = await fetch(url, { headers: { authorization: basic('oidc', jwt) } });
    assert.equal(res.status, 200);
    const body = (await res.json()) as { token: string; refresh_token?: string };
    assert.equal(body.refresh_token, undefined);
    const claims = decodeJwt(body.token);
    assert.equal(claims.sub, `ci:${SUB}`);
    assert.deepEqual(claims.access, [{ type: 'repository', name: 'acme/app', actions: ['pull', 'push'] }]);
    const pushed = await pushAs(registry.url, 'acme/app', `Bearer ${body.token}`, 'v1');
    assert.equal(pushed.status, 201, pushed.body);
  });

  it('takes it as the password of the OAuth2 password grant (POST)', async () => {
    const jwt = await issuer.sign({ sub: SUB, iat: now(), claims: MAIN });
    const form = new URLSearchParams({ grant_type: 'password', service: 'berth-test', username: 'ci', password: jwt, scope: 'repository:shared/base:push', access_type: 'offline' });
    const res = await fetch(`${registry.url}/auth/token`, { method: 'POST', body: form });
    assert.equal(res.status, 200);
    const body = (await res.json()) as { access_token: string; refresh_token?: string };
    assert.equal(body.refresh_token, undefined);
    assert.deepEqual(decodeJwt(body.access_token).access, [{ type: 'repository', name: 'shared/base', actions: ['push'] }]);
  });

  it('refuses a wrong token with its reason: 401 on GET, 400 invalid_grant on POST', async () => {
    const wrong = await issuer.sign({ sub: SUB, iat: now(), aud: 'elsewhere', claims: MAIN });
    const get = await fetch(`${registry.url}/auth/token?service=berth-test&scope=repository:acme/app:pull`, { headers: { authorization: basic('ci', wrong) } });
    assert.equal(get.status, 401);
    assert.match((await firstError(get)).message, /^federated token refused: wrong audience "elsewhere"/);
    const expired = await issuer.sign({ sub: SUB, iat: now() - 3600, claims: MAIN });
    const post = await fetch(`${registry.url}/auth/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'password', service: 'berth-test', username: 'ci', password: expired }) });
    assert.equal(post.status, 400);
    const body = await post.text();
    assert.match(body, /invalid_grant/);
    assert.match(body, /federated token refused: expired at/);
  });
});

describe('federated JWTs and the failed-login limits', () => {
  const clock = new ManualClock();
  let issuer: JwtIssuer;
  let registry: TestRegistry;
  let dir: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'berth-federation-limit-'));
    issuer = await JwtIssuer.start();
    await writeHtpasswd(join(dir, 'htpasswd'), {});
    registry = await startBerth({ auth: { htpasswd: { path: join(dir, 'htpasswd') }, federation: federationBlock(issuer), failedlogins: { burst: 2, every: '1m' } } }, { clock });
  });
  after(() => stopFixture(registry, issuer, dir));

  it('counts refused tokens as failed logins: after the burst even a good token gets 429', async () => {
    const iat = Math.floor(clock.now() / 1000);
    const bad = await issuer.sign({ sub: SUB, iat, aud: 'elsewhere', claims: MAIN });
    const good = await issuer.sign({ sub: SUB, iat, claims: MAIN });
    const get = (token: string) => fetch(`${registry.url}/v2/acme/app/tags/list`, { headers: { authorization: basic('ci', token) } });
    assert.equal((await get(good)).status, 404); // accepted: the repository does not exist yet
    assert.equal((await get(bad)).status, 401);
    assert.equal((await get(bad)).status, 401);
    const limited = await get(good);
    assert.equal(limited.status, 429);
    assert.equal((await firstError(limited)).code, 'TOOMANYREQUESTS');
  });

  it("limits per token subject, not per the Basic user name every job shares", async () => {
    const iat = Math.floor(clock.now() / 1000);
    const broken = 'repo:acme/broken:ref:refs/heads/main';
    const bad = await issuer.sign({ sub: broken, iat, aud: 'elsewhere', claims: { repository: 'acme/broken', ref: 'refs/heads/main' } });
    assert.equal(await statusFrom('127.0.0.2', bad), 401);
    assert.equal(await statusFrom('127.0.0.2', bad), 401);
    // from another address: the broken job's subject is limited, another job under the same user name is not
    const sameSubject = await issuer.sign({ sub: broken, iat, claims: { repository: 'acme/broken', ref: 'refs/heads/main' } });
    assert.equal(await statusFrom('127.0.0.3', sameSubject), 429);
    const otherJob = await issuer.sign({ sub: 'repo:acme/app:environment:prod', iat, claims: MAIN });
    assert.equal(await statusFrom('127.0.0.3', otherJob), 404);
  });

  /** the status of a pull by `ci:<token>` sent from the local address `from` */
  function statusFrom(from: string, token: string): Promise<number> {
    const { hostname, port } = new URL(registry.url);
    return new Promise((resolve, reject) => {
      const req = request({ host: hostname, port, path: '/v2/acme/app/tags/list', localAddress: from, headers: { authorization: basic('ci', token) } }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      req.on('error', reject);
      req.end();
    });
  }
});

describe('federation and the audit sink', () => {
  it('records a token accepted once however often it is sent (the edge records refusals: every 401 to a request with credentials)', async () => {
    const clock = new ManualClock();
    const issuer = await JwtIssuer.start();
    try {
      const records: AuditRecord[] = [];
      const [options] = federationBlock(issuer);
      const federation = new Federation([{ ...options, algorithms: ['RS256'], rules: options.rules as never }], {
        logger: pino({ level: 'silent' }),
        clock,
        audit: { record: (r) => records.push(r) },
      });
      const guard = new LoginGuard(undefined);
      const refuse = (message: string) => new RegistryError('UNAUTHORIZED', message);
      const iat = Math.floor(clock.now() / 1000);
      const good = await issuer.sign({ sub: SUB, iat, claims: MAIN });
      for (let i = 0; i < 3; i++) {
        const grant = await federation.login({ user: 'ci', password: good }, '127.0.0.9', guard, refuse);
        assert.equal(grant?.user, `ci:${SUB}`);
      }
      const bad = await issuer.sign({ sub: SUB, iat, claims: { repository: 'evil/x' } });
      await assert.rejects(federation.login({ user: 'ci', password: bad }, '127.0.0.9', guard, refuse), /no rule of issuer "ci" matches/);
      assert.equal(await federation.login({ user: 'alice', password: 'alice-pw' }, '127.0.0.9', guard, refuse), undefined);
      assert.deepEqual(records, [
        { actor: `ci:${SUB}`, address: '127.0.0.9', action: 'sign-in', outcome: 'ok', detail: 'federated token accepted by rule 1 of ci: acme/app, shared/*' },
      ]);
    } finally {
      await issuer.stop();
    }
  });
});
