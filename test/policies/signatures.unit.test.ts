/**
 * The signature check without a registry: cosign's formats (cosign.ts), the key kinds (ECDSA,
 * RSA, Ed25519 with Node's crypto), a payload of another image replayed, the verification cache
 * and its key (the edge records a refusal in the audit log, as every 403). The real cosign is driven in signatures.test.ts.
 */
import assert from 'node:assert/strict';
import { createHash, generateKeyPairSync, sign as cryptoSign, type KeyObject } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { PolicySet } from '../../src/policies/match.js';
import { isAttachment, isCosignTag, signatureTag } from '../../src/policies/signatures/cosign.js';
import { SignaturePolicy } from '../../src/policies/signatures/gate.js';
import { readKeySets } from '../../src/policies/signatures/keys.js';
import { SignatureVerifier, type SignatureReads } from '../../src/policies/signatures/verifier.js';
import type { Digest } from '../../src/registry/digest.js';
import { RegistryError } from '../../src/registry/errors.js';

const sha = (b: Buffer): Digest => `sha256:${createHash('sha256').update(b).digest('hex')}`;

/** an in-memory repository: manifests by digest and tag, blobs, referrers; counts reads */
class FakeRepository implements SignatureReads {
  manifests = new Map<string, Buffer>();
  tagged = new Map<string, Digest>();
  blobs = new Map<string, Buffer>();
  referred = new Map<string, { digest: Digest; artifactType: string }[]>();
  blobReads = 0;

  addManifest(json: unknown, tag?: string): { digest: Digest; content: Buffer } {
    const content = Buffer.from(JSON.stringify(json));
    const digest = sha(content);
    this.manifests.set(digest, content);
    if (tag) this.tagged.set(tag, digest);
    return { digest, content };
  }
  addBlob(content: Buffer): Digest {
    const digest = sha(content);
    this.blobs.set(digest, content);
    return digest;
  }
  async manifest(_name: string, reference: { tag: string } | { digest: Digest }) {
    const digest = 'tag' in reference ? this.tagged.get(reference.tag) : reference.digest;
    const content = digest && this.manifests.get(digest);
    if (!digest || !content) throw new RegistryError('MANIFEST_UNKNOWN');
    return { digest, mediaType: 'application/vnd.oci.image.manifest.v1+json', content };
  }
  async referrers(_name: string, subject: Digest, artifactType?: string) {
    return (this.referred.get(subject) ?? []).filter((d) => artifactType === undefined || d.artifactType === artifactType).map((d) => ({ mediaType: 'application/vnd.oci.image.manifest.v1+json', size: 1, ...d }));
  }
  async statBlob(_name: string, digest: Digest) {
    const blob = this.blobs.get(digest);
    if (!blob) throw new RegistryError('BLOB_UNKNOWN');
    return { digest, size: blob.length, stored: true };
  }
  async openBlob(_name: string, digest: Digest) {
    this.blobReads++;
    return Readable.from([this.blobs.get(digest)!]);
  }
  async tags() {
    return [...this.tagged.keys()].sort();
  }
}

function payloadFor(digest: Digest): Buffer {
  return Buffer.from(JSON.stringify({ critical: { identity: { 'docker-reference': 'example/app' }, image: { 'docker-manifest-digest': digest }, type: 'cosign container image signature' }, optional: null }));
}

/** what `cosign sign` writes, signed with `key` (digest over the payload as cosign does), for `digest` */
function signatureManifest(repo: FakeRepository, key: KeyObject, digest: Digest, options: { referrer?: boolean; payloadDigest?: Digest } = {}) {
  const payload = payloadFor(options.payloadDigest ?? digest);
  const signature = cryptoSign(key.asymmetricKeyType === 'ed25519' ? null : 'sha256', payload, key).toString('base64');
  const layer = { mediaType: 'application/vnd.dev.cosign.simplesigning.v1+json', size: payload.length, digest: repo.addBlob(payload), annotations: { 'dev.cosignproject.cosign/signature': signature } };
  const config = { mediaType: options.referrer ? 'application/vnd.dev.cosign.artifact.sig.v1+json' : 'application/vnd.oci.image.config.v1+json', size: 2, digest: repo.addBlob(Buffer.from('{}')) };
  const manifest = { schemaVersion: 2, mediaType: 'application/vnd.oci.image.manifest.v1+json', config, layers: [layer], ...(options.referrer ? { subject: { mediaType: 'application/vnd.oci.image.manifest.v1+json', size: 1, digest } } : {}) };
  if (options.referrer) {
    const added = repo.addManifest(manifest);
    repo.referred.set(digest, [...(repo.referred.get(digest) ?? []), { digest: added.digest, artifactType: 'application/vnd.dev.cosign.artifact.sig.v1+json' }]);
  } else {
    repo.addManifest(manifest, signatureTag(digest));
  }
}

const image = (n: number) => ({ schemaVersion: 2, mediaType: 'application/vnd.oci.image.manifest.v1+json', config: { mediaType: 'application/vnd.oci.image.config.v1+json', size: n, digest: `sha256:${'a'.repeat(64)}` }, layers: [] });

describe('signature verification', () => {
  let dir: string;
  const pairs = {
    ec: generateKeyPairSync('ec', { namedCurve: 'P-256' }),
    rsa: generateKeyPairSync('rsa', { modulusLength: 2048 }),
    ed25519: generateKeyPairSync('ed25519'),
    untrusted: generateKeyPairSync('ec', { namedCurve: 'P-256' }),
  };
  let policies: PolicySet;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'berth-sig-unit-'));
    for (const [name, pair] of Object.entries(pairs)) await writeFile(join(dir, `${name}.pub`), pair.publicKey.export({ type: 'spki', format: 'pem' }));
    policies = new PolicySet([
      { repositories: ['prod/**'], signatures: { require: true, cosign: { keys: ['ec', 'rsa', 'ed25519'].map((k) => join(dir, `${k}.pub`)) } } },
      { repositories: ['shown/**'], signatures: { require: false, cosign: { keys: [join(dir, 'ec.pub')] } } },
    ]);
  });

  after(async () => {
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  function gate(repo: FakeRepository) {
    return new SignaturePolicy(policies, readKeySets(policies), new SignatureVerifier(repo));
  }
  const reader = { mayPush: false };

  it('knows the signatures of ECDSA, RSA and Ed25519 keys, in both places, by key name', async () => {
    const repo = new FakeRepository();
    const signed = repo.addManifest(image(1), 'v1');
    signatureManifest(repo, pairs.ec.privateKey, signed.digest);
    signatureManifest(repo, pairs.rsa.privateKey, signed.digest, { referrer: true });
    signatureManifest(repo, pairs.ed25519.privateKey, signed.digest, { referrer: true });
    signatureManifest(repo, pairs.untrusted.privateKey, signed.digest, { referrer: true });
    const policy = gate(repo);
    assert.deepEqual(await policy.signedBy('prod/app', signed.digest), ['ec', 'ed25519', 'rsa']);
    assert.equal(await policy.refusal('prod/app', { tag: 'v1' }, signed, reader), undefined);
    assert.equal(await policy.signedBy('elsewhere/app', signed.digest), undefined, 'no signatures policy: no mark');
  });

  it('refuses a signature whose payload names another image (replayed)', async () => {
    const repo = new FakeRepository();
    const victim = repo.addManifest(image(2), 'v2');
    const other = repo.addManifest(image(3), 'v3');
    signatureManifest(repo, pairs.ec.privateKey, victim.digest, { payloadDigest: other.digest });
    const message = await gate(repo).refusal('prod/app', { tag: 'v2' }, victim, reader);
    assert.match(message ?? '', /policies\[0\] \(prod\/\*\*\)/);
    assert.match(message ?? '', /ec, rsa, ed25519/);
  });

  it('exempts pushers, signatures and artifacts, and does not refuse where require is false', async () => {
    const repo = new FakeRepository();
    const unsigned = repo.addManifest(image(4), 'v4');
    const policy = gate(repo);
    assert.equal(await policy.refusal('prod/app', { tag: 'v4' }, unsigned, { ...reader, mayPush: true }), undefined);
    assert.equal(await policy.refusal('shown/app', { tag: 'v4' }, unsigned, reader), undefined);
    assert.deepEqual(await policy.signedBy('shown/app', unsigned.digest), []);
    const sbom = repo.addManifest({ ...image(5), config: { mediaType: 'application/vnd.oci.empty.v1+json', size: 2, digest: `sha256:${'c'.repeat(64)}` }, artifactType: 'application/spdx+json' });
    assert.equal(await policy.refusal('prod/app', { digest: sbom.digest }, sbom, reader), undefined);
    const attestation = repo.addManifest({ ...image(5), layers: [{ mediaType: 'application/vnd.dsse.envelope.v1+json', size: 1, digest: `sha256:${'d'.repeat(64)}` }] });
    assert.equal(await policy.refusal('prod/app', { tag: `sha256-${'b'.repeat(64)}.att` }, attestation, reader), undefined);
    const sigTag = `sha256-${'b'.repeat(64)}.sig`;
    assert.ok(isCosignTag(sigTag) && isCosignTag(sigTag.replace('.sig', '.att')) && !isCosignTag('v1.sig'));
    assert.ok(!isAttachment(image(6)));
  });

  it('refuses a runnable image dressed as an attachment: under a .sig tag, with a subject or an artifactType', async () => {
    const repo = new FakeRepository();
    const policy = gate(repo);
    const dressed = [
      { ...image(11) },
      { ...image(12), subject: { mediaType: 'application/vnd.oci.image.manifest.v1+json', size: 1, digest: `sha256:${'e'.repeat(64)}` } },
      { ...image(13), artifactType: 'application/vnd.dev.cosign.artifact.sig.v1+json' },
    ].map((m) => repo.addManifest(m));
    assert.ok(await policy.refusal('prod/app', { tag: `sha256-${'f'.repeat(64)}.sig` }, dressed[0], reader));
    for (const m of dressed.slice(1)) assert.ok(await policy.refusal('prod/app', { digest: m.digest }, m, reader));
  });

  it('caches a verification until the .sig tag or the referrers change', async () => {
    const repo = new FakeRepository();
    const target = repo.addManifest(image(7), 'v7');
    const verifier = new SignatureVerifier(repo);
    const keys = readKeySets(policies).get(policies.policies[0])!;
    assert.deepEqual(await verifier.signers('prod/app', target.digest, keys), []);
    signatureManifest(repo, pairs.untrusted.privateKey, target.digest);
    assert.deepEqual(await verifier.signers('prod/app', target.digest, keys), [], 'an untrusted signature');
    const reads = repo.blobReads;
    assert.deepEqual(await verifier.signers('prod/app', target.digest, keys), []);
    assert.equal(repo.blobReads, reads, 'answered from the cache: no payload read');
    signatureManifest(repo, pairs.ec.privateKey, target.digest, { referrer: true });
    assert.deepEqual(await verifier.signers('prod/app', target.digest, keys), ['ec'], 'a new referrer changes the key');
    signatureManifest(repo, pairs.rsa.privateKey, target.digest); // cosign rewrites the .sig tag with both signatures; here the tag moves
    assert.deepEqual(await verifier.signers('prod/app', target.digest, keys), ['ec', 'rsa'], 'a moved .sig tag changes the key');
  });

  it('keeps the cache bounded', async () => {
    const repo = new FakeRepository();
    const verifier = new SignatureVerifier(repo, 2);
    const keys = readKeySets(policies).get(policies.policies[0])!;
    const digests = [8, 9, 10].map((n) => repo.addManifest(image(n)).digest);
    for (const d of digests) signatureManifest(repo, pairs.ec.privateKey, d);
    for (const d of digests) await verifier.signers('prod/app', d, keys);
    const reads = repo.blobReads;
    await verifier.signers('prod/app', digests[2], keys);
    assert.equal(repo.blobReads, reads, 'the newest is kept');
    await verifier.signers('prod/app', digests[0], keys);
    assert.equal(repo.blobReads, reads + 1, 'the oldest was dropped');
  });

  it('stops start-up on a missing or wrong key file, naming the policy', async () => {
    await writeFile(join(dir, 'not-a-key.pub'), 'hello');
    for (const file of ['missing.pub', 'not-a-key.pub']) {
      const set = new PolicySet([{ repositories: ['x/*'], signatures: { require: true, cosign: { keys: [join(dir, file)] } } }]);
      assert.throws(() => readKeySets(set), new RegExp(`policies\\[0\\] \\(x/\\*\\): signatures.cosign.keys: .*${file}`));
    }
  });
});
