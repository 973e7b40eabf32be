/**
 * Bearer token authentication against the real server: tokens signed through an x5c chain ending
 * in the root bundle, by a bundle key named by kid, by JWKS keys and by the built-in issuer; every
 * endpoint without a token, with an invalid one and with too little scope; the edge cases of
 * token validation; the issuer's GET and POST (password and refresh_token grants).
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync, randomUUID, type KeyObject } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { exportJWK, SignJWT, type JWTHeaderParameters } from 'jose';
import { libtrustKeyID } from '../../src/crypto/libtrust-keyid.js';
import { basic, issueCert, makeCA, writeHtpasswd, x5cOf, type CertFiles } from '../helpers/auth.js';
import { call, describeEndpoint, endpoints, seededRoot } from '../helpers/auth-endpoints.js';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { errorCodes } from '../helpers/blobs.js';
import { ManualClock } from '../helpers/manual-clock.js';
import type { Image } from '../helpers/images.js';
import { needTool } from '../helpers/tools.js';

const SERVICE = 'berth-test';
const ISSUER = 'test-issuer';
const REALM = 'https://auth.example.test/token';
const USERS = { admin: 'admin-pw', reader: 'reader-pw' };
const ACCESS = {
  '**': { admin: ['pull', 'push', 'delete'] },
  'team/*': { '*': ['pull'], admin: ['push', 'delete'] },
  'public/*': { anonymous: ['pull'], '*': ['pull'] },
};

type Access = { type: string; name: string; actions: string[] }[];

interface Signer {
  key: KeyObject;
  alg: string;
  header: Partial<JWTHeaderParameters>;
}

async function mint(signer: Signer, claims: Record<string, unknown> = {}, options: { access?: Access; exp?: number; nbf?: number; aud?: string; iss?: string } = {}): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const jwt = new SignJWT({ access: options.access ?? [], ...claims })
    .setProtectedHeader({ alg: signer.alg, ...signer.header })
    .setIssuer(options.iss ?? ISSUER)
    .setAudience(options.aud ?? SERVICE)
    .setSubject('someone')
    .setIssuedAt(now)
    .setJti(randomUUID())
    .setExpirationTime(options.exp ?? now + 300);
  if (options.nbf !== undefined) jwt.setNotBefore(options.nbf);
  return jwt.sign(signer.key);
}

const b64 = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
const repo = (name: string, ...actions: string[]) => ({ type: 'repository', name, actions });
const bearer = (token: string) => `Bearer ${token}`;

function parseChallenge(header: string | null): Record<string, string> {
  assert.ok(header?.startsWith('Bearer '), `expected a Bearer challenge, got ${header}`);
  return Object.fromEntries([...header!.slice(7).matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1], m[2]]));
}

describe('token authentication', needTool('openssl', 'certificates for x5c chains'), () => {
  let registry: TestRegistry;
  /** the registry's clock: the htpasswd file is checked at most once a second of it */
  const clock = new ManualClock(Date.now());
  let root: string;
  let dir: string;
  let image: Image;
  let ca: CertFiles;
  let leaf: CertFiles;
  let stranger: CertFiles;
  let strangerLeaf: CertFiles;
  let chainSigner: Signer;
  let edJwks: Signer;
  let rsaJwks: Signer;
  let full: string;

  before(async () => {
    ({ root, image } = await seededRoot(['team/app', 'public/base', 'private/x']));
    dir = await mkdtemp(join(tmpdir(), 'berth-token-'));
    ca = await makeCA(dir, 'token-ca');
    leaf = await issueCert(dir, ca, 'token-signer', { use: 'signing' });
    stranger = await makeCA(dir, 'stranger-ca');
    strangerLeaf = await issueCert(dir, stranger, 'stranger-signer', { use: 'signing' });
    chainSigner = { key: (await import('node:crypto')).createPrivateKey(leaf.keyPem), alg: 'ES256', header: { x5c: [x5cOf(leaf.certPem)] } };
    const ed = generateKeyPairSync('ed25519');
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 });
    edJwks = { key: ed.privateKey, alg: 'EdDSA', header: { kid: 'ed-1' } };
    rsaJwks = { key: rsa.privateKey, alg: 'RS256', header: { kid: 'rsa-1' } };
    await writeFile(join(dir, 'jwks.json'), JSON.stringify({ keys: [{ ...(await exportJWK(ed.publicKey)), kid: 'ed-1' }, { ...(await exportJWK(rsa.publicKey)), kid: 'rsa-1' }] }));
    const issuerKey = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    await writeFile(join(dir, 'issuer.key'), issuerKey.privateKey.export({ type: 'pkcs8', format: 'pem' }));
    await writeHtpasswd(join(dir, 'htpasswd'), USERS);
    registry = await startBerth(
      {
        auth: {
          htpasswd: { realm: 'berth-issuer', path: join(dir, 'htpasswd') },
          token: {
            realm: REALM,
            service: SERVICE,
            issuer: { name: ISSUER, enabled: true, signingkey: join(dir, 'issuer.key') },
            rootcertbundle: ca.cert,
            jwks: join(dir, 'jwks.json'),
          },
          access: ACCESS,
        },
      },
      { root, clock },
    );
    full = await mint(chainSigner, {}, {
      access: [repo('team/app', 'pull', 'push', 'delete'), repo('team/new', 'pull', 'push'), { type: 'registry', name: 'catalog', actions: ['*'] }],
    });
  });
  after(async () => {
    await registry?.stop();
    for (const d of [root, dir]) if (d) await rm(d, { recursive: true, force: true });
  });

  const manifest = (authorization?: string) =>
    fetch(`${registry.url}/v2/team/app/manifests/latest`, { headers: authorization === undefined ? {} : { authorization } });

  async function assertInvalid(token: string, why: string | RegExp): Promise<void> {
    const res = await manifest(bearer(token));
    assert.equal(res.status, 401, String(why));
    const challenge = parseChallenge(res.headers.get('www-authenticate'));
    assert.equal(challenge.error, 'invalid_token', String(why));
    const body = (await res.json()) as { errors: { code: string; message: string }[] };
    assert.equal(body.errors[0].code, 'UNAUTHORIZED');
    assert.match(body.errors[0].message, why instanceof RegExp ? why : new RegExp(why));
  }

  it('answers every endpoint without a token with 401 and a Bearer challenge naming the scope', async () => {
    for (const e of endpoints('team/app', image)) {
      const res = await call(registry.url, e);
      const what = describeEndpoint(e);
      assert.equal(res.status, 401, what);
      assert.equal(res.headers.get('registry-distribution-api-version'), 'registry/2.0', what);
      const challenge = parseChallenge(res.headers.get('www-authenticate'));
      assert.equal(challenge.realm, REALM, what);
      assert.equal(challenge.service, SERVICE, what);
      const scope = e.needs === undefined ? undefined : e.needs === 'catalog' ? 'registry:catalog:*' : `repository:team/app:${e.needs}`;
      assert.equal(challenge.scope, scope, what);
      if (e.method !== 'HEAD') assert.deepEqual(await errorCodes(res), ['UNAUTHORIZED'], what);
    }
  });

  it('answers every endpoint with an invalid token with 401 error="invalid_token"', async () => {
    const expired = await mint(chainSigner, {}, { access: [repo('team/app', 'pull', 'push', 'delete')], exp: Math.floor(Date.now() / 1000) - 3600 });
    for (const e of endpoints('team/app', image)) {
      const res = await call(registry.url, e, bearer(expired));
      assert.equal(res.status, 401, describeEndpoint(e));
      assert.equal(parseChallenge(res.headers.get('www-authenticate')).error, 'invalid_token', describeEndpoint(e));
      await res.arrayBuffer();
    }
  });

  it('answers 401 error="insufficient_scope" when the token lacks the action, and lets the request through when not', async () => {
    const pullOnly = await mint(chainSigner, {}, { access: [repo('team/app', 'pull')] });
    const otherRepo = await mint(chainSigner, {}, { access: [repo('team/other', 'pull', 'push', 'delete')] });
    for (const e of endpoints('team/app', image)) {
      const what = describeEndpoint(e);
      const allowedFull = await call(registry.url, e, bearer(full));
      assert.ok(allowedFull.status !== 401 && allowedFull.status !== 403, `${what} with every grant -> ${allowedFull.status}`);
      await allowedFull.arrayBuffer().catch(() => undefined);
      for (const [token, allowed] of [
        [pullOnly, e.needs === undefined || e.needs === 'pull'],
        [otherRepo, e.needs === undefined],
      ] as const) {
        const res = await call(registry.url, e, bearer(token));
        if (allowed) {
          assert.ok(res.status !== 401 && res.status !== 403, `${what} -> ${res.status}`);
        } else {
          assert.equal(res.status, 401, what);
          const challenge = parseChallenge(res.headers.get('www-authenticate'));
          assert.equal(challenge.error, 'insufficient_scope', what);
          assert.ok(challenge.scope, what);
        }
        await res.arrayBuffer().catch(() => undefined);
      }
    }
  });

  it('accepts tokens from every trusted key: x5c chain (leaf alone or with the root), bundle kid, JWKS EdDSA and RS256', async () => {
    const access = [repo('team/app', 'pull')];
    const caKey = (await import('node:crypto')).createPrivateKey(ca.keyPem);
    const caPub = (await import('node:crypto')).createPublicKey(ca.certPem);
    const signers: [string, Signer][] = [
      ['x5c leaf', chainSigner],
      ['x5c leaf+root', { ...chainSigner, header: { x5c: [x5cOf(leaf.certPem), x5cOf(ca.certPem)] } }],
      ['kid of a bundle certificate', { key: caKey, alg: 'ES256', header: { kid: libtrustKeyID(caPub) } }],
      ['JWKS EdDSA', edJwks],
      ['JWKS RS256', rsaJwks],
    ];
    for (const [what, signer] of signers) assert.equal((await manifest(bearer(await mint(signer, {}, { access })))).status, 200, what);
  });

  it('takes exp and nbf with a small leeway', async () => {
    const now = Math.floor(Date.now() / 1000);
    const access = [repo('team/app', 'pull')];
    assert.equal((await manifest(bearer(await mint(chainSigner, {}, { access, exp: now - 20 })))).status, 200, 'expired 20s ago: within the leeway');
    assert.equal((await manifest(bearer(await mint(chainSigner, {}, { access, nbf: now + 20 })))).status, 200, 'valid in 20s: within the leeway');
    await assertInvalid(await mint(chainSigner, {}, { access, exp: now - 3600 }), 'token expired');
    await assertInvalid(await mint(chainSigner, {}, { access, nbf: now + 3600 }), /nbf/);
  });

  it('refuses a wrong audience, a wrong issuer and a token without exp', async () => {
    const access = [repo('team/app', 'pull')];
    await assertInvalid(await mint(chainSigner, {}, { access, aud: 'other-service' }), /aud/);
    await assertInvalid(await mint(chainSigner, {}, { access, iss: 'other-issuer' }), /iss/);
    const noExp = await new SignJWT({ access }).setProtectedHeader({ alg: 'ES256', ...chainSigner.header }).setIssuer(ISSUER).setAudience(SERVICE).sign(chainSigner.key);
    await assertInvalid(noExp, /exp/);
  });

  it('refuses untrusted keys: another CA\'s chain, a broken chain, an unknown kid, no key named at all', async () => {
    const access = [repo('team/app', 'pull')];
    const strangerKey = (await import('node:crypto')).createPrivateKey(strangerLeaf.keyPem);
    await assertInvalid(await mint({ key: strangerKey, alg: 'ES256', header: { x5c: [x5cOf(strangerLeaf.certPem)] } }, {}, { access }), /untrusted key/);
    await assertInvalid(await mint({ key: strangerKey, alg: 'ES256', header: { x5c: [x5cOf(strangerLeaf.certPem), x5cOf(ca.certPem)] } }, {}, { access }), /chain is broken/);
    await assertInvalid(await mint({ key: strangerKey, alg: 'ES256', header: { x5c: [x5cOf(leaf.certPem)] } }, {}, { access }), /signature/);
    await assertInvalid(await mint({ ...edJwks, header: { kid: 'unknown' } }, {}, { access }), /untrusted key/);
    await assertInvalid(await mint({ ...edJwks, header: {} }, {}, { access }), /no signing key/);
    assert.ok(stranger);
  });

  it('refuses alg none and HMAC, even with a trusted kid', async () => {
    const now = Math.floor(Date.now() / 1000);
    const claims = { iss: ISSUER, aud: SERVICE, exp: now + 300, access: [repo('team/app', 'pull')] };
    await assertInvalid(`${b64({ alg: 'none', typ: 'JWT' })}.${b64(claims)}.`, /algorithm not allowed|alg/);
    const hmac = await new SignJWT(claims).setProtectedHeader({ alg: 'HS256', kid: 'ed-1' }).sign(new TextEncoder().encode('ed-1 public key as a secret'));
    await assertInvalid(hmac, /algorithm not allowed/);
  });

  it('refuses malformed tokens', async () => {
    for (const token of ['abc', 'a.b', `${b64({ alg: 'ES256' })}.!!!.sig`, `${b64({ alg: 'ES256' })}.${b64('x')}.c2ln`, `${'x'.repeat(10)}.${'y'.repeat(10)}.${'z'.repeat(10)}`]) {
      const res = await manifest(bearer(token));
      assert.equal(res.status, 401, token);
      assert.equal(parseChallenge(res.headers.get('www-authenticate')).error, 'invalid_token', token);
    }
    assert.equal((await manifest('Bearer')).status, 401);
    assert.equal(parseChallenge((await manifest(basic('admin', 'admin-pw'))).headers.get('www-authenticate')).error, undefined, 'Basic is no token: a plain challenge');
  });

  it('mounts with pull on the source, and starts a plain upload without it', async () => {
    const layer = image.blobs[image.blobs.length - 1].digest;
    const withPull = await fetch(`${registry.url}/v2/team/new/blobs/uploads/?mount=${layer}&from=team/app`, { method: 'POST', headers: { authorization: bearer(full) } });
    assert.equal(withPull.status, 201);
    const withoutPull = await fetch(`${registry.url}/v2/team/new/blobs/uploads/?mount=${layer}&from=private/x`, { method: 'POST', headers: { authorization: bearer(full) } });
    assert.equal(withoutPull.status, 202);
    const challenge = await fetch(`${registry.url}/v2/team/new/blobs/uploads/?mount=${layer}&from=team/app`, { method: 'POST' });
    assert.equal(challenge.status, 401);
    assert.equal(parseChallenge(challenge.headers.get('www-authenticate')).scope, 'repository:team/new:push repository:team/app:pull', 'the challenge asks for the source too');
  });

  describe('built-in issuer', () => {
    const tokenURL = (query: string) => `${registry.url}/auth/token?service=${SERVICE}&${query}`;
    interface TokenBody {
      token: string;
      access_token: string;
      expires_in: number;
      issued_at: string;
      refresh_token?: string;
    }
    const getToken = async (query: string, authorization?: string) => {
      const res = await fetch(tokenURL(query), { headers: authorization ? { authorization } : {} });
      assert.equal(res.status, 200, await res.clone().text());
      return (await res.json()) as TokenBody;
    };
    const claims = (token: string) => JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString()) as Record<string, unknown>;

    it('issues a token with the requested scopes cut down to what auth.access allows', async () => {
      const body = await getToken('scope=repository:team/app:pull,push%20repository:private/x:pull', basic('reader', 'reader-pw'));
      assert.equal(body.token, body.access_token);
      assert.equal(body.expires_in, 300);
      assert.ok(Math.abs(Date.parse(body.issued_at) - Date.now()) < 60_000);
      assert.deepEqual(claims(body.token).access, [repo('team/app', 'pull')]);
      assert.equal(claims(body.token).sub, 'reader');
      assert.equal((await manifest(bearer(body.token))).status, 200);
      const push = await fetch(`${registry.url}/v2/team/app/blobs/uploads/`, { method: 'POST', headers: { authorization: bearer(body.token) } });
      assert.equal(push.status, 401);
      assert.equal(parseChallenge(push.headers.get('www-authenticate')).error, 'insufficient_scope');
    });

    it('grants the catalog only to users who may pull everything', async () => {
      const admin = await getToken('scope=registry:catalog:*', basic('admin', 'admin-pw'));
      assert.deepEqual(claims(admin.token).access, [{ type: 'registry', name: 'catalog', actions: ['*'] }]);
      const list = await fetch(`${registry.url}/v2/_catalog`, { headers: { authorization: bearer(admin.token) } });
      assert.deepEqual(((await list.json()) as { repositories: string[] }).repositories, ['private/x', 'public/base', 'team/app']);
      const reader = await getToken('scope=registry:catalog:*', basic('reader', 'reader-pw'));
      assert.deepEqual(claims(reader.token).access, []);
    });

    it('issues anonymous tokens with what `anonymous` may do, and refuses wrong credentials', async () => {
      const anon = await getToken('scope=repository:public/base:pull,push&scope=repository:team/app:pull');
      assert.deepEqual(claims(anon.token).access, [repo('public/base', 'pull')]);
      assert.equal((await fetch(`${registry.url}/v2/public/base/manifests/latest`, { headers: { authorization: bearer(anon.token) } })).status, 200);
      for (const authorization of [basic('reader', 'wrong'), basic('nobody', 'reader-pw')]) {
        const res = await fetch(tokenURL('scope=repository:team/app:pull'), { headers: { authorization } });
        assert.equal(res.status, 401);
        assert.equal(res.headers.get('www-authenticate'), 'Basic realm="berth-issuer"');
        assert.deepEqual(await errorCodes(res), ['UNAUTHORIZED']);
      }
      const other = await fetch(`${registry.url}/auth/token?service=elsewhere`, { headers: { authorization: basic('reader', 'reader-pw') } });
      assert.equal(other.status, 400);
    });

    it('answers POST with the password grant, a refresh token, and the refresh_token grant', async () => {
      const post = (form: Record<string, string>) =>
        fetch(`${registry.url}/auth/token`, { method: 'POST', body: new URLSearchParams(form), headers: { 'content-type': 'application/x-www-form-urlencoded' } });
      const first = await post({ grant_type: 'password', username: 'admin', password: 'admin-pw', service: SERVICE, scope: 'repository:team/app:pull,push', access_type: 'offline', client_id: 'test' });
      assert.equal(first.status, 200);
      const body = (await first.json()) as TokenBody;
      assert.deepEqual(claims(body.access_token).access, [repo('team/app', 'pull', 'push')]);
      assert.ok(body.refresh_token);
      const refreshed = await post({ grant_type: 'refresh_token', refresh_token: body.refresh_token!, service: SERVICE, scope: 'repository:private/x:pull', client_id: 'test' });
      assert.equal(refreshed.status, 200);
      const second = (await refreshed.json()) as TokenBody;
      assert.deepEqual(claims(second.access_token).access, [repo('private/x', 'pull')]);
      assert.equal((await fetch(`${registry.url}/v2/private/x/manifests/latest`, { headers: { authorization: bearer(second.access_token) } })).status, 200);
      // a refresh token is no access token
      const asAccess = await manifest(bearer(body.refresh_token!));
      assert.equal(asAccess.status, 401);
      assert.equal(parseChallenge(asAccess.headers.get('www-authenticate')).error, 'invalid_token');
      // OAuth2's answer to a wrong grant (RFC 6749 5.2): 400 invalid_grant, no Basic challenge (a browser would open its login dialog)
      for (const [form, message] of [
        [{ grant_type: 'password', username: 'admin', password: 'nope', service: SERVICE }, /^invalid username or password$/],
        [{ grant_type: 'password', username: 'nobody', password: 'admin-pw', service: SERVICE }, /^invalid username or password$/],
        [{ grant_type: 'refresh_token', refresh_token: full, service: SERVICE }, /^invalid refresh token/], // an access token is no refresh token
      ] as const) {
        const refused = await post(form);
        assert.equal(refused.status, 400, JSON.stringify(form));
        assert.equal(refused.headers.get('www-authenticate'), null);
        assert.equal(refused.headers.get('cache-control'), 'no-store');
        const body = (await refused.json()) as { error: string; error_description: string; errors: { code: string; message: string }[] };
        assert.equal(body.error, 'invalid_grant');
        assert.match(body.error_description, message);
        assert.deepEqual(body.errors.map((e) => e.code), ['UNAUTHORIZED']);
        assert.equal(body.errors[0].message, body.error_description);
      }
      assert.equal((await post({ grant_type: 'client_credentials', service: SERVICE })).status, 400);
    });

    it('revokes refresh tokens when the password changes or the user is removed', async () => {
      const post = (form: Record<string, string>) =>
        fetch(`${registry.url}/auth/token`, { method: 'POST', body: new URLSearchParams(form), headers: { 'content-type': 'application/x-www-form-urlencoded' } });
      const login = async (password: string) => {
        const res = await post({ grant_type: 'password', username: 'reader', password, service: SERVICE, access_type: 'offline', client_id: 'test' });
        assert.equal(res.status, 200);
        return ((await res.json()) as TokenBody).refresh_token!;
      };
      const refresh = (token: string) => post({ grant_type: 'refresh_token', refresh_token: token, service: SERVICE, scope: 'repository:team/app:pull', client_id: 'test' });
      const path = join(dir, 'htpasswd');
      const old = await login('reader-pw');
      assert.equal((await refresh(old)).status, 200);
      try {
        await writeHtpasswd(path, { ...USERS, reader: 'a-new-password' });
        await clock.advance(1000); // the file is checked at most once a second
        const refused = await refresh(old);
        assert.equal(refused.status, 400);
        const body = (await refused.json()) as { error: string; errors: { message: string }[] };
        assert.equal(body.error, 'invalid_grant');
        assert.match(body.errors[0].message, /previous password: log in again/);
        const fresh = await login('a-new-password');
        assert.equal((await refresh(fresh)).status, 200);
        const { reader: _removed, ...others } = USERS;
        await writeHtpasswd(path, others);
        await clock.advance(1000);
        assert.equal((await refresh(fresh)).status, 400, 'a removed user');
      } finally {
        await writeHtpasswd(path, USERS);
        await clock.advance(1000);
      }
    });
  });
});
