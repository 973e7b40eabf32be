/**
 * Property tests (issue 18) of what a client sends to authenticate: bearer tokens (the JWT parser
 * and verifier of src/auth/token.ts, its `access` claim) and Basic credentials (parseBasic). A
 * token signed by a trusted key round-trips its subject and access; anything else, however
 * shaped, is a TokenError (401 invalid_token at the edge), never another exception.
 */
import { before, test } from 'node:test';
import assert from 'node:assert/strict';
import { generateKeyPairSync, type KeyObject } from 'node:crypto';
import fc from 'fast-check';
import { SignJWT } from 'jose';
import { parseAccessClaim, TokenError, TokenVerifier } from '../../src/auth/token.js';
import { parseBasic } from '../../src/auth/basic.js';
import { params } from './fuzz.js';

const ISSUER = 'fuzz-issuer';
const SERVICE = 'fuzz-registry';
const KID = 'fuzz-key';
let privateKey: KeyObject;
let verifier: TokenVerifier;

before(() => {
  const pair = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  privateKey = pair.privateKey;
  verifier = new TokenVerifier({ issuer: ISSUER, service: SERVICE, keys: new Map([[KID, pair.publicKey]]) });
});

const b64 = (value: unknown) => Buffer.from(typeof value === 'string' ? value : (JSON.stringify(value) ?? '')).toString('base64url');

const scope = fc.record(
  { type: fc.constantFrom('repository', 'registry'), name: fc.stringMatching(/^[a-z0-9]{1,8}(\/[a-z0-9]{1,8})?$/), actions: fc.uniqueArray(fc.constantFrom('pull', 'push', 'delete', '*'), { maxLength: 4 }) },
  { noNullPrototype: true },
);

/** a TokenError, the only failure the verifier may have */
async function refused(token: string): Promise<void> {
  try {
    await verifier.verify(token);
  } catch (err) {
    if (!(err instanceof TokenError)) assert.fail(`expected a TokenError, got ${(err as Error)?.stack ?? err}`);
    assert.ok(err.message.length > 5);
    return;
  }
  assert.fail(`token accepted: ${token}`);
}

test('tokens signed by a trusted key round-trip their subject and access', async () => {
  await fc.assert(
    fc.asyncProperty(fc.option(fc.string({ minLength: 1, maxLength: 20 }), { nil: undefined }), fc.array(scope, { maxLength: 4 }), async (sub, access) => {
      const jwt = new SignJWT({ access }).setProtectedHeader({ alg: 'ES256', kid: KID }).setIssuer(ISSUER).setAudience(SERVICE).setIssuedAt().setExpirationTime('5m');
      if (sub !== undefined) jwt.setSubject(sub);
      const grant = await verifier.verify(await jwt.sign(privateKey));
      assert.equal(grant.user, sub);
      assert.deepEqual(grant.access, access);
      for (const s of access) for (const action of s.actions) assert.ok(grant.allows({ type: s.type as 'repository', name: s.name, action }));
    }),
    params(100),
  );
});

test('tokens of any shape that no trusted key signed are a TokenError', async () => {
  const header = fc.oneof(
    fc.jsonValue({ maxDepth: 2 }),
    fc.record({
      alg: fc.oneof(fc.constantFrom('none', 'HS256', 'ES256', 'RS256', 'EdDSA', ''), fc.jsonValue({ maxDepth: 1 })),
      kid: fc.oneof(fc.constant(KID), fc.jsonValue({ maxDepth: 1 })),
      x5c: fc.oneof(fc.array(fc.oneof(fc.base64String({ maxLength: 40 }), fc.jsonValue({ maxDepth: 1 })), { maxLength: 3 }), fc.jsonValue({ maxDepth: 1 })),
      crit: fc.jsonValue({ maxDepth: 1 }),
      b64: fc.boolean(),
    }, { requiredKeys: [] }),
  );
  const payload = fc.oneof(
    fc.jsonValue({ maxDepth: 3 }),
    fc.record({ iss: fc.constantFrom(ISSUER, 'x', 1), aud: fc.constantFrom(SERVICE, [SERVICE], 1), exp: fc.oneof(fc.integer(), fc.double(), fc.string()), nbf: fc.integer(), access: fc.jsonValue({ maxDepth: 3 }) }, { requiredKeys: [] }),
  );
  const part = fc.oneof(fc.string({ unit: fc.constantFrom(...'AZaz09-_'), maxLength: 60 }), fc.string({ maxLength: 20 }));
  const token = fc.oneof(
    fc.tuple(header, payload, part).map(([h, p, s]) => `${b64(h)}.${b64(p)}.${s}`),
    fc.tuple(part, part, part).map((parts) => parts.join('.')),
    fc.string({ unit: 'binary', maxLength: 80 }),
  );
  await fc.assert(fc.asyncProperty(token, refused), params(400));
});

test('a trusted token with one character changed is a TokenError', async () => {
  const token = await new SignJWT({ access: [] }).setProtectedHeader({ alg: 'ES256', kid: KID }).setIssuer(ISSUER).setAudience(SERVICE).setExpirationTime('5m').sign(privateKey);
  await fc.assert(
    fc.asyncProperty(fc.nat({ max: token.length - 1 }), fc.constantFrom(...'AQgw_-.=+/ '), async (at, c) => {
      fc.pre(token[at] !== c);
      const changed = `${token.slice(0, at)}${c}${token.slice(at + 1)}`;
      // changing the last base64url character may keep the same bytes (its low bits are padding)
      fc.pre(!(at === token.length - 1 && Buffer.from(changed.split('.')[2], 'base64url').equals(Buffer.from(token.split('.')[2], 'base64url'))));
      await refused(changed);
    }),
    params(300),
  );
});

test('the access claim: anything reads as a list of well-typed scopes', () => {
  fc.assert(
    fc.property(fc.jsonValue({ maxDepth: 4 }), (claim) => {
      for (const s of parseAccessClaim(claim)) {
        assert.equal(typeof s.type, 'string');
        assert.equal(typeof s.name, 'string');
        assert.ok(s.actions.every((a) => typeof a === 'string'));
      }
    }),
    params(500),
  );
  fc.assert(fc.property(fc.array(scope), (scopes) => assert.deepEqual(parseAccessClaim(scopes), scopes)), params(200));
});

test('Basic credentials: user and password round-trip; any header parses or is undefined', () => {
  const user = fc.string({ maxLength: 20 }).filter((u) => !u.includes(':'));
  const password = fc.string({ unit: 'grapheme', maxLength: 30 });
  const scheme = fc.constantFrom('Basic', 'basic', 'BASIC');
  fc.assert(
    fc.property(user, password, scheme, fc.constantFrom(' ', '  ', '\t'), (u, p, s, gap) => {
      assert.deepEqual(parseBasic(`${s}${gap}${Buffer.from(`${u}:${p}`).toString('base64')}`), { user: u, password: p });
    }),
    params(500),
  );
  const header = fc.oneof(
    fc.string({ unit: 'binary', maxLength: 60 }),
    fc.string({ maxLength: 40 }).map((s) => `Basic ${s}`),
    fc.uint8Array({ maxLength: 40 }).map((b) => `Basic ${Buffer.from(b).toString('base64')}`),
  );
  fc.assert(
    fc.property(header, (h) => {
      const creds = parseBasic(h);
      if (creds !== undefined) assert.ok(typeof creds.user === 'string' && typeof creds.password === 'string' && !creds.user.includes(':'));
    }),
    params(800),
  );
});
