/**
 * GET /v2/<name>/referrers/<digest> (OCI distribution 1.1): the manifests whose `subject` is the
 * digest, as an OCI image index, against the real server on both storage drivers.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { sha256 } from '../helpers/blobs.js';
import { buildImage, ManifestTypes, pushImage, pushImageOK, type Descriptor, type Image } from '../helpers/images.js';

const SBOM = 'application/vnd.example.sbom.v1+json';
const SIGNATURE = 'application/vnd.cncf.notary.signature';
const BUNDLE = 'application/vnd.example.bundle.v1';

interface ReferrersIndex {
  schemaVersion: number;
  mediaType: string;
  manifests: Descriptor[];
}

/** the descriptor the referrers API must list for `image` */
function expectedDescriptor(image: Image): Descriptor {
  const d: Descriptor = { mediaType: image.mediaType, digest: image.digest, size: image.body.length };
  if (image.artifactType !== undefined) d.artifactType = image.artifactType;
  if (image.annotations !== undefined) d.annotations = image.annotations;
  return d;
}

const byDigest = (a: Descriptor, b: Descriptor) => (a.digest < b.digest ? -1 : a.digest > b.digest ? 1 : 0);

// the HTTP behaviour; S3 semantics are the driver suite's and the S3 files' (test/storage/s3.test.ts, test/http/s3-redirects.test.ts)
for (const driver of ['filesystem', 'inmemory'] as const) {
  describe(`referrers (${driver})`, () => {
    let registry: TestRegistry;
    let url: string;
    let counter = 0;
    const fresh = (what: string) => `ref/${what}/r${++counter}`;

    before(async () => {
      registry = await startBerth({}, { driver });
      url = registry.url;
    });
    after(() => registry.stop());

    const referrers = (name: string, digest: string, artifactType?: string) =>
      fetch(`${url}/v2/${name}/referrers/${digest}${artifactType === undefined ? '' : `?artifactType=${encodeURIComponent(artifactType)}`}`);

    /** a 200 OCI index response; its descriptors sorted by digest */
    async function listed(res: Response): Promise<Descriptor[]> {
      const text = await res.text();
      assert.equal(res.status, 200, text);
      assert.equal(res.headers.get('content-type'), ManifestTypes.ociIndex);
      const index = JSON.parse(text) as ReferrersIndex;
      assert.equal(index.schemaVersion, 2);
      assert.equal(index.mediaType, ManifestTypes.ociIndex);
      assert.ok(Array.isArray(index.manifests));
      return [...index.manifests].sort(byDigest);
    }

    /** a repository with an image and, pointing at it, an SBOM, a signature, a cosign-style image and an index */
    async function populated() {
      const name = fresh('set');
      const subject = await pushImageOK(url, name, buildImage('oci-manifest'), 'v1');
      const sbom = buildImage('oci-artifact', { subject, artifactType: SBOM, annotations: { 'org.opencontainers.image.created': '2024-03-01T10:00:00Z', 'com.example.kind': 'sbom' } });
      const signature = buildImage('oci-artifact', { subject, artifactType: SIGNATURE, annotations: { 'io.cncf.notary.x509chain.thumbprint#S256': '["b1c2"]' } });
      // no artifactType: the config's media type stands in for it
      const plain = buildImage('oci-manifest', { subject });
      const index = buildImage('oci-index', { subject, artifactType: BUNDLE, annotations: { 'com.example.bundle': 'yes' } });
      // pointing elsewhere: never listed for `subject`
      const unrelated = buildImage('oci-artifact', { artifactType: SBOM });
      for (const image of [sbom, signature, plain, index, unrelated]) {
        const res = await pushImage(url, name, image);
        assert.equal(res.status, 201, await res.clone().text());
        assert.equal(res.headers.get('oci-subject'), image.subject!.digest);
      }
      return { name, subject, sbom, signature, plain, index, unrelated };
    }

    it('lists every manifest whose subject is the digest, as an OCI image index of descriptors', async () => {
      const { name, subject, sbom, signature, plain, index } = await populated();
      const res = await referrers(name, subject.digest);
      assert.equal(res.headers.get('oci-filters-applied'), null);
      const got = await listed(res);
      assert.deepEqual(got, [sbom, signature, plain, index].map(expectedDescriptor).sort(byDigest));
      // the descriptors say what the manifests are
      const plainEntry = got.find((d) => d.digest === plain.digest)!;
      assert.equal(plainEntry.artifactType, 'application/vnd.oci.image.config.v1+json');
      const indexEntry = got.find((d) => d.digest === index.digest)!;
      assert.equal(indexEntry.mediaType, ManifestTypes.ociIndex);
      assert.equal(indexEntry.artifactType, BUNDLE);
      assert.deepEqual(got.find((d) => d.digest === sbom.digest)!.annotations, sbom.annotations);
      // and each one is the manifest the registry serves under that digest
      for (const d of got) {
        const manifest = await fetch(`${url}/v2/${name}/manifests/${d.digest}`);
        assert.equal(manifest.headers.get('content-type'), d.mediaType);
        assert.equal((await manifest.arrayBuffer()).byteLength, d.size);
      }
    });

    it('?artifactType= filters and the answer says OCI-Filters-Applied: artifactType', async () => {
      const { name, subject, sbom, signature } = await populated();
      const onlySbom = await referrers(name, subject.digest, SBOM);
      assert.equal(onlySbom.headers.get('oci-filters-applied'), 'artifactType');
      assert.deepEqual(await listed(onlySbom), [expectedDescriptor(sbom)]);
      const onlySignature = await referrers(name, subject.digest, SIGNATURE);
      assert.equal(onlySignature.headers.get('oci-filters-applied'), 'artifactType');
      assert.deepEqual(await listed(onlySignature), [expectedDescriptor(signature)]);
      const none = await referrers(name, subject.digest, 'application/vnd.example.nothing');
      assert.equal(none.headers.get('oci-filters-applied'), 'artifactType');
      assert.deepEqual(await listed(none), []);
    });

    it('an unknown digest in a known repository: 200 and an empty index', async () => {
      const { name } = await populated();
      const res = await referrers(name, sha256('nothing points here'));
      assert.deepEqual(await listed(res), []);
      // also with a filter
      assert.deepEqual(await listed(await referrers(name, sha256('nothing points here'), SBOM)), []);
    });

    it('a subject that was never pushed still gets its referrers listed (OCI allows referrers first)', async () => {
      const name = fresh('dangling');
      const artifact = await pushImageOK(url, name, buildImage('oci-artifact'));
      assert.equal((await fetch(`${url}/v2/${name}/manifests/${artifact.subject!.digest}`)).status, 404);
      assert.deepEqual(await listed(await referrers(name, artifact.subject!.digest)), [expectedDescriptor(artifact)]);
    });

    it('deleting a referrer removes it from the list; the others stay', async () => {
      const { name, subject, sbom, signature, plain, index } = await populated();
      assert.equal((await fetch(`${url}/v2/${name}/manifests/${sbom.digest}`, { method: 'DELETE' })).status, 202);
      assert.deepEqual(await listed(await referrers(name, subject.digest)), [signature, plain, index].map(expectedDescriptor).sort(byDigest));
      assert.deepEqual(await listed(await referrers(name, subject.digest, SBOM)), []);
      // deleting an index referrer works the same way
      assert.equal((await fetch(`${url}/v2/${name}/manifests/${index.digest}`, { method: 'DELETE' })).status, 202);
      assert.deepEqual(await listed(await referrers(name, subject.digest)), [signature, plain].map(expectedDescriptor).sort(byDigest));
      // pushing it again brings it back
      assert.equal((await pushImage(url, name, sbom)).status, 201);
      assert.deepEqual(await listed(await referrers(name, subject.digest, SBOM)), [expectedDescriptor(sbom)]);
    });

    it('a referrer pushed again, by digest and by tag, is listed once', async () => {
      const name = fresh('repush');
      const subject = await pushImageOK(url, name, buildImage('oci-manifest'), 'v1');
      const artifact = buildImage('oci-artifact', { subject });
      await pushImageOK(url, name, artifact);
      await pushImageOK(url, name, artifact, 'sbom');
      await pushImageOK(url, name, artifact, 'sbom-again');
      assert.deepEqual(await listed(await referrers(name, subject.digest)), [expectedDescriptor(artifact)]);
    });

    it('referrers are per repository', async () => {
      const { subject, sbom } = await populated();
      const other = fresh('other');
      await pushImageOK(url, other, buildImage('oci-manifest'), 'v1');
      assert.deepEqual(await listed(await referrers(other, subject.digest)), []);
      // the same artifact pushed to the other repository is listed there too
      await pushImageOK(url, other, subject);
      await pushImageOK(url, other, sbom);
      assert.deepEqual(await listed(await referrers(other, subject.digest)), [expectedDescriptor(sbom)]);
    });

    it('a malformed digest: 400 DIGEST_INVALID', async () => {
      const { name } = await populated();
      for (const digest of ['sha256:abc', `sha256:${'g'.repeat(64)}`, `sha256:${'A'.repeat(64)}`, `md5:${'0'.repeat(32)}`, 'latest', 'sha256:']) {
        const res = await referrers(name, digest);
        assert.equal(res.status, 400, digest);
        const body = (await res.json()) as { errors: { code: string }[] };
        assert.deepEqual(
          body.errors.map((e) => e.code),
          ['DIGEST_INVALID'],
          digest,
        );
      }
    });

    it('a repository with no manifest at all: 200 and an empty index (OCI: never 404); an invalid name: 400 NAME_INVALID', async () => {
      assert.deepEqual(await listed(await referrers(fresh('never'), sha256('x'))), []);
      assert.deepEqual(await listed(await referrers(fresh('never'), `sha512:${'ab'.repeat(64)}`, SBOM)), []);
      const invalid = await fetch(`${url}/v2/Bad/referrers/${sha256('x')}`);
      assert.equal(invalid.status, 400);
      assert.equal(((await invalid.json()) as { errors: { code: string }[] }).errors[0].code, 'NAME_INVALID');
    });

    it('sha512 subjects: referrers of either algorithm are listed under the subject\'s sha512 digest, and leave with their DELETE', async () => {
      const name = fresh('sha512');
      const subject = await pushImageOK(url, name, buildImage('oci-manifest', { algorithm: 'sha512' }));
      const sbom = buildImage('oci-artifact', { subject, artifactType: SBOM, algorithm: 'sha512' });
      // a sha256 referrer of the sha512 subject
      const signature = buildImage('oci-artifact', { subject, artifactType: SIGNATURE });
      for (const image of [sbom, signature]) {
        const res = await pushImage(url, name, image);
        assert.equal(res.status, 201, await res.clone().text());
        assert.equal(res.headers.get('oci-subject'), subject.digest);
      }
      assert.deepEqual(await listed(await referrers(name, subject.digest)), [sbom, signature].map(expectedDescriptor).sort(byDigest));
      assert.deepEqual(await listed(await referrers(name, subject.digest, SBOM)), [expectedDescriptor(sbom)]);
      // the sha256 digest of the same subject bytes is another subject, with no referrers
      assert.deepEqual(await listed(await referrers(name, sha256(subject.body))), []);
      // a sha512 referrer of a sha256 subject
      const plain = await pushImageOK(url, name, buildImage('oci-manifest'), 'plain');
      const onPlain = await pushImageOK(url, name, buildImage('oci-artifact', { subject: plain, algorithm: 'sha512' }));
      assert.deepEqual(await listed(await referrers(name, plain.digest)), [expectedDescriptor(onPlain)]);
      assert.equal((await fetch(`${url}/v2/${name}/manifests/${sbom.digest}`, { method: 'DELETE' })).status, 202);
      assert.deepEqual(await listed(await referrers(name, subject.digest)), [expectedDescriptor(signature)]);
    });

    it('OCI-Subject is answered for a subject on a PUT by tag as well, and not for manifests without one', async () => {
      const name = fresh('subjectheader');
      const subject = await pushImageOK(url, name, buildImage('oci-manifest'), 'v1');
      const res = await pushImage(url, name, buildImage('oci-artifact', { subject }), 'sbom');
      assert.equal(res.status, 201);
      assert.equal(res.headers.get('oci-subject'), subject.digest);
      const plain = await pushImage(url, name, buildImage('oci-manifest'), 'plain');
      assert.equal(plain.status, 201);
      assert.equal(plain.headers.get('oci-subject'), null);
    });
  });
}
