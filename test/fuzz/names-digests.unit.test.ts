/**
 * Property tests (issue 18) of what a client writes in a path or query: repository names, tags,
 * digests, the route matcher, pagination and token scopes. Each input either parses (and then
 * round-trips) or is refused with the spec's error code; nothing else may escape.
 */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { checkRepositoryName, checkTag, isRepositoryName, isTag, MAX_NAME_LENGTH } from '../../src/registry/names.js';
import { ALGORITHMS, digestAlgorithm, digestBytes, digestHex, digestOf, digestOfHex, isDigest, parseAlgorithm, parseDigest } from '../../src/registry/digest.js';
import { matchRoute } from '../../src/http/routes.js';
import { parsePageQuery } from '../../src/http/pagination.js';
import { formatScope, parseScope } from '../../src/auth/access.js';
import { outcome, params } from './fuzz.js';

/** characters that matter to the parsers, and some that must never get through */
const NASTY = fc.constantFrom(...'aAzZ09._-/:%@+=~ ', '..', '%2F', '%2e', '\u0000', '\n', '\u00e9', '\u{1F600}', 'sha256:', 'sha512:');
const nastyString = fc.oneof(fc.string({ unit: NASTY, maxLength: 40 }), fc.string({ unit: 'binary', maxLength: 40 }));

// the grammar of the spec (2.1); Distribution also takes `__` and runs of `-` (docs/decisions.md, "Property tests")
const component = fc.stringMatching(/^[a-z0-9]{1,8}(?:[._-][a-z0-9]{1,8}){0,3}$/);
const validName = fc.array(component, { minLength: 1, maxLength: 6 }).map((parts) => parts.join('/')).filter((name) => name.length <= MAX_NAME_LENGTH);
const validTag = fc.stringMatching(/^[A-Za-z0-9_][A-Za-z0-9._-]{0,127}$/);
const HEX = { sha256: 64, sha384: 96, sha512: 128 } as const;
const validDigest = fc
  .constantFrom(...ALGORITHMS)
  .chain((algorithm) => fc.string({ unit: fc.constantFrom(...'0123456789abcdef'), minLength: HEX[algorithm], maxLength: HEX[algorithm] }).map((hex) => `${algorithm}:${hex}`));

test('repository names: every name of the grammar is accepted and matched as itself', () => {
  fc.assert(
    fc.property(validName, (name) => {
      assert.equal(checkRepositoryName(name), name);
      assert.ok(isRepositoryName(name));
      assert.deepEqual(matchRoute(`/v2/${name}/tags/list`), { kind: 'tags', name });
      assert.deepEqual(matchRoute(`/v2/${name}/blobs/uploads/`), { kind: 'uploads', name });
    }),
    params(300),
  );
});

test('repository names: anything else is NAME_INVALID, and isRepositoryName agrees', () => {
  fc.assert(
    fc.property(fc.oneof(nastyString, validName.map((n) => `${n}/`), validName.map((n) => `${n}//x`), fc.string({ minLength: 256, maxLength: 300, unit: fc.constant('a') })), (name) => {
      const result = outcome(() => checkRepositoryName(name), ['NAME_INVALID']);
      assert.equal('value' in result, isRepositoryName(name), `checkRepositoryName and isRepositoryName disagree on ${JSON.stringify(name)}`);
      if ('value' in result) assert.match(name, /^[a-z0-9._/-]{1,255}$/);
    }),
    params(1000),
  );
});

test('tags: the grammar round-trips, anything else is TAG_INVALID', () => {
  fc.assert(fc.property(validTag, (tag) => assert.equal(checkTag(tag), tag)), params(300));
  fc.assert(
    fc.property(nastyString, (tag) => {
      const result = outcome(() => checkTag(tag), ['TAG_INVALID']);
      assert.equal('value' in result, isTag(tag));
    }),
    params(1000),
  );
});

test('digests: sha256/384/512 round-trip through parse, algorithm and hex', () => {
  fc.assert(
    fc.property(validDigest, (digest) => {
      const parsed = parseDigest(digest);
      assert.equal(parsed, digest);
      assert.equal(`${digestAlgorithm(parsed)}:${digestHex(parsed)}`, digest);
      assert.equal(digestOfHex(digestHex(parsed)), digest);
      assert.equal(digestOf(digestAlgorithm(parsed), digestHex(parsed)), digest);
    }),
    params(300),
  );
  fc.assert(
    fc.property(fc.constantFrom(...ALGORITHMS), fc.uint8Array({ maxLength: 200 }), (algorithm, bytes) => {
      const digest = digestBytes(algorithm, Buffer.from(bytes));
      assert.ok(isDigest(digest));
      assert.equal(parseAlgorithm(algorithm), algorithm);
    }),
    params(200),
  );
});

test('digests: anything else is DIGEST_INVALID with a reason, never a crash', () => {
  const nearDigest = fc.oneof(
    validDigest.map((d) => d.toUpperCase()),
    validDigest.map((d) => d.slice(0, -1)),
    validDigest.map((d) => `${d}0`),
    validDigest.map((d) => d.replace(':', '::')),
    validDigest.map((d) => `md5${d.slice(d.indexOf(':'))}`),
    validDigest.map((d) => `${d}\n`),
  );
  fc.assert(
    fc.property(fc.oneof(nastyString, nearDigest), (value) => {
      const result = outcome(() => parseDigest(value), ['DIGEST_INVALID']);
      assert.equal('value' in result, isDigest(value));
    }),
    params(1000),
  );
  fc.assert(
    fc.property(nastyString, (value) => {
      outcome(() => parseAlgorithm(value), ['DIGEST_INVALID']);
    }),
    params(300),
  );
});

test('routes: any path is a route, no route, NAME_INVALID or BLOB_UPLOAD_UNKNOWN', () => {
  const suffix = fc.constantFrom('/tags/list', '/manifests/', '/blobs/', '/blobs/uploads/', '/referrers/', '');
  const path = fc.oneof(
    nastyString.map((s) => `/v2/${s}`),
    fc.tuple(fc.oneof(validName, nastyString), suffix, nastyString).map(([name, s, rest]) => `/v2/${name}${s}${rest}`),
  );
  fc.assert(
    fc.property(path, (p) => {
      const result = outcome(() => matchRoute(p), ['NAME_INVALID', 'BLOB_UPLOAD_UNKNOWN']);
      if ('value' in result && result.value && 'name' in result.value) assert.ok(isRepositoryName(result.value.name));
    }),
    params(1000),
  );
});

test('pagination: n is an integer from 0 to the cap or PAGINATION_NUMBER_INVALID', () => {
  const n = fc.oneof(fc.nat().map(String), fc.integer().map(String), nastyString, fc.constant('99999999999999999999999'), fc.constant('1e3'));
  fc.assert(
    fc.property(fc.option(n, { nil: undefined }), fc.option(nastyString, { nil: undefined }), fc.integer({ min: 0, max: 5000 }), (raw, last, max) => {
      const result = outcome(() => parsePageQuery({ n: raw, last }, { defaultN: 100, max }), ['PAGINATION_NUMBER_INVALID']);
      if ('value' in result) {
        assert.ok(Number.isSafeInteger(result.value.n) && result.value.n >= 0 && result.value.n <= max);
        if (raw !== undefined) assert.equal(result.value.n, Number(raw));
      }
    }),
    params(500),
  );
});

test('token scopes: a scope round-trips through format and parse; any text parses or is no scope', () => {
  const action = fc.constantFrom('pull', 'push', 'delete', '*');
  const scope = fc.record({ type: fc.constantFrom('repository', 'registry'), name: fc.oneof(validName, fc.constant('catalog')), actions: fc.uniqueArray(action, { minLength: 1, maxLength: 4 }) }, { noNullPrototype: true });
  fc.assert(fc.property(scope, (s) => assert.deepEqual(parseScope(formatScope(s)), s)), params(300));
  fc.assert(
    fc.property(nastyString, (text) => {
      const parsed = parseScope(text);
      if (parsed !== undefined) assert.ok(parsed.type !== '' && parsed.name !== '');
    }),
    params(500),
  );
});
