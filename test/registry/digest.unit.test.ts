/** Digest parsing: the three algorithms, their lengths, and what an unsupported one is told. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { digestAlgorithm, digestHex, digestOf, digestOfHex, isDigest, parseAlgorithm, parseDigest } from '../../src/registry/digest.js';
import { RegistryError } from '../../src/registry/errors.js';

const hex = (n: number) => 'a1'.repeat(n / 2);

function rejected(work: () => unknown): RegistryError {
  try {
    work();
  } catch (err) {
    assert.ok(err instanceof RegistryError);
    assert.equal(err.code, 'DIGEST_INVALID');
    return err;
  }
  assert.fail('expected DIGEST_INVALID');
}

describe('digests', () => {
  it('sha256, sha384 and sha512 with their own hex lengths, lowercase', () => {
    for (const [algorithm, length] of [['sha256', 64], ['sha384', 96], ['sha512', 128]] as const) {
      const digest = `${algorithm}:${hex(length)}`;
      assert.equal(parseDigest(digest), digest);
      assert.equal(digestAlgorithm(parseDigest(digest)), algorithm);
      assert.equal(digestHex(parseDigest(digest)), hex(length));
      assert.equal(isDigest(`${algorithm}:${hex(length === 64 ? 128 : 64)}`), false, 'another length');
      assert.equal(isDigest(`${algorithm}:${hex(length).toUpperCase()}`), false, 'uppercase');
    }
  });

  it('an unsupported algorithm is told the supported ones; a wrong length how long it should be', () => {
    assert.match(rejected(() => parseDigest(`md5:${hex(32)}`)).message, /unsupported digest algorithm "md5".*sha256, sha384 or sha512/);
    assert.match(rejected(() => parseAlgorithm('blake3')).message, /"blake3".*sha256, sha384 or sha512/);
    assert.equal(parseAlgorithm('sha512'), 'sha512');
    assert.match(rejected(() => parseDigest(`sha512:${hex(64)}`)).message, /sha512 digest: expected 128 lowercase hex characters, got 64/);
    assert.match(rejected(() => parseDigest('sha512')).message, /expected algorithm:hex/);
  });

  it('a hex alone names its algorithm by its length; names that are no digest hex are undefined', () => {
    assert.equal(digestOfHex(hex(64)), `sha256:${hex(64)}`);
    assert.equal(digestOfHex(hex(96)), `sha384:${hex(96)}`);
    assert.equal(digestOfHex(hex(128)), `sha512:${hex(128)}`);
    for (const name of [hex(62), 'trashed', hex(64).toUpperCase(), '']) assert.equal(digestOfHex(name), undefined, name);
    assert.equal(digestOf('sha512', hex(64)), undefined);
    assert.equal(digestOf('sha512', hex(128)), `sha512:${hex(128)}`);
  });
});
