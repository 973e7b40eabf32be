/**
 * ManifestStore and TagStore on the in-memory driver: put and get by tag and digest, tags moving
 * and untagged on delete, referrers, the references a PUT must find, and what a delete leaves.
 */
import assert from 'node:assert/strict';
import { beforeEach, describe, it } from 'node:test';
import { BlobStore } from '../../src/registry/blobs.js';
import { sha256, type Digest } from '../../src/registry/digest.js';
import { RegistryError } from '../../src/registry/errors.js';
import * as layout from '../../src/registry/layout.js';
import { ManifestStore, MissingReferences } from '../../src/registry/manifest-store.js';
import { TagStore } from '../../src/registry/tags.js';
import { InMemoryDriver } from '../../src/storage/inmemory.js';

const OCI_MANIFEST = 'application/vnd.oci.image.manifest.v1+json';
const OCI_INDEX = 'application/vnd.oci.image.index.v1+json';
const name = 'lib/app';

async function rejectsWith(work: Promise<unknown>, codes: string[], status?: number): Promise<RegistryError> {
  let caught: unknown;
  await work.catch((err: unknown) => (caught = err));
  assert.ok(caught instanceof RegistryError, `a RegistryError ${codes.join()}, got ${String(caught)}`);
  assert.deepEqual(
    caught.entries().map((e) => e.code),
    codes,
  );
  if (status !== undefined) assert.equal(caught.status, status);
  return caught;
}

describe('ManifestStore and TagStore (in-memory driver)', () => {
  let driver: InMemoryDriver;
  let blobs: BlobStore;
  let tags: TagStore;
  let manifests: ManifestStore;
  let seq = 0;

  beforeEach(() => {
    driver = new InMemoryDriver();
    blobs = new BlobStore(driver);
    tags = new TagStore(driver);
    manifests = new ManifestStore(driver, blobs, tags, {});
  });

  /** a blob stored and linked into `repo` */
  async function blob(repo: string, content: string): Promise<{ mediaType: string; digest: Digest; size: number }> {
    const bytes = Buffer.from(content);
    const digest = sha256(bytes);
    await driver.putContent(layout.blobData(digest), bytes);
    await blobs.link(repo, digest);
    return { mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip', digest, size: bytes.length };
  }

  /** an OCI image manifest whose config and layer are stored in `repo` (unless `store` is false) */
  async function image(repo = name, options: { subject?: { digest: Digest; size: number }; artifactType?: string; store?: boolean } = {}): Promise<Buffer> {
    const n = ++seq;
    const make = (content: string) => (options.store === false ? { mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip', digest: sha256(content), size: content.length } : blob(repo, content));
    const config = { ...(await make(`config ${n}`)), mediaType: 'application/vnd.oci.image.config.v1+json' };
    const layer = await make(`layer ${n}`);
    return Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: OCI_MANIFEST,
        ...(options.artifactType && { artifactType: options.artifactType }),
        config,
        layers: [layer],
        ...(options.subject && { subject: { mediaType: OCI_MANIFEST, ...options.subject } }),
      }),
    );
  }

  function index(children: Buffer[]): Buffer {
    return Buffer.from(JSON.stringify({ schemaVersion: 2, mediaType: OCI_INDEX, manifests: children.map((c) => ({ mediaType: OCI_MANIFEST, digest: sha256(c), size: c.length })) }));
  }

  it('stores a manifest by tag and serves it by tag and by digest, bytes and type as pushed', async () => {
    const body = await image();
    const parsed = await manifests.put(name, { tag: 'v1' }, OCI_MANIFEST, body);
    assert.equal(parsed.digest, sha256(body));
    for (const reference of [{ tag: 'v1' }, { digest: parsed.digest }]) {
      const got = await manifests.get(name, reference);
      assert.deepEqual(got, { digest: parsed.digest, mediaType: OCI_MANIFEST, content: body });
    }
    assert.equal(await tags.resolve(name, 'v1'), parsed.digest);
    assert.deepEqual(await tags.list(name), ['v1']);
    assert.equal(await manifests.hasRevision(name, parsed.digest), true);
  });

  it('a tag pushed again points at the new manifest; its history keeps the old one', async () => {
    const first = await image();
    const second = await image();
    await manifests.put(name, { tag: 'latest' }, OCI_MANIFEST, first);
    await manifests.put(name, { tag: 'latest' }, OCI_MANIFEST, second);
    assert.equal(await tags.resolve(name, 'latest'), sha256(second));
    assert.deepEqual((await manifests.get(name, { tag: 'latest' })).content, second);
    await driver.stat(layout.tagIndexLink(name, 'latest', sha256(first)));
    await driver.stat(layout.tagIndexLink(name, 'latest', sha256(second)));
  });

  it('unknown tags and digests: MANIFEST_UNKNOWN; an unknown repository: NAME_UNKNOWN', async () => {
    await manifests.put(name, { tag: 'v1' }, OCI_MANIFEST, await image());
    await rejectsWith(manifests.get(name, { tag: 'nope' }), ['MANIFEST_UNKNOWN']);
    await rejectsWith(manifests.get(name, { digest: sha256('nothing') }), ['MANIFEST_UNKNOWN']);
    await rejectsWith(manifests.get('lib/other', { tag: 'v1' }), ['NAME_UNKNOWN']);
    await rejectsWith(manifests.delete('lib/other', sha256('nothing')), ['NAME_UNKNOWN']);
    assert.equal(await tags.resolve(name, 'nope'), undefined);
  });

  it('references must be in the repository: MissingReferences (the edge answers 400) with one BLOB_UNKNOWN per blob, one MANIFEST_UNKNOWN per child; nothing stored', async () => {
    const missingBlobs = await image(name, { store: false });
    const err = await rejectsWith(manifests.put(name, { tag: 'v1' }, OCI_MANIFEST, missingBlobs), ['BLOB_UNKNOWN', 'BLOB_UNKNOWN']);
    // the core names what is missing; the status is the edge's choice (http/handlers/manifests.ts)
    assert.ok(err instanceof MissingReferences);
    assert.equal(err.status, undefined);
    const { config, layers } = JSON.parse(missingBlobs.toString()) as { config: { digest: string }; layers: { digest: string }[] };
    assert.deepEqual(
      err.entries().map((e) => e.detail),
      [{ digest: config.digest }, { digest: layers[0].digest }],
    );
    const stored = await image();
    await manifests.put(name, { digest: sha256(stored) }, OCI_MANIFEST, stored);
    const notPushed = await image();
    assert.ok((await rejectsWith(manifests.put(name, { tag: 'all' }, OCI_INDEX, index([stored, notPushed])), ['MANIFEST_UNKNOWN'])) instanceof MissingReferences);
    assert.equal(await tags.resolve(name, 'v1'), undefined);
    assert.equal(await tags.resolve(name, 'all'), undefined);
    // blobs linked in another repository do not count
    await rejectsWith(manifests.put('lib/elsewhere', { tag: 'v1' }, OCI_MANIFEST, stored), ['BLOB_UNKNOWN', 'BLOB_UNKNOWN']);
  });

  it('delete removes the revision and every tag that names it; tags that moved away stay', async () => {
    const doomed = await image();
    const kept = await image();
    for (const tag of ['a', 'b', 'moved']) await manifests.put(name, { tag }, OCI_MANIFEST, doomed);
    await manifests.put(name, { tag: 'keep' }, OCI_MANIFEST, kept);
    await manifests.put(name, { tag: 'moved' }, OCI_MANIFEST, kept);
    await manifests.delete(name, sha256(doomed));
    assert.deepEqual(await tags.list(name), ['keep', 'moved']);
    await rejectsWith(manifests.get(name, { digest: sha256(doomed) }), ['MANIFEST_UNKNOWN']);
    await rejectsWith(manifests.get(name, { tag: 'a' }), ['MANIFEST_UNKNOWN']);
    assert.deepEqual((await manifests.get(name, { tag: 'moved' })).content, kept);
    // deleted twice: MANIFEST_UNKNOWN
    await rejectsWith(manifests.delete(name, sha256(doomed)), ['MANIFEST_UNKNOWN']);
  });

  it('untagAll leaves tags of other manifests alone and copes with no tags at all', async () => {
    const body = await image();
    await manifests.put(name, { digest: sha256(body) }, OCI_MANIFEST, body);
    await tags.untagAll(name, sha256(body));
    await tags.tag(name, 'x', sha256(body));
    await tags.untagAll(name, sha256('something else'));
    assert.deepEqual(await tags.list(name), ['x']);
    await tags.untagAll(name, sha256(body));
    assert.deepEqual(await tags.list(name), []);
  });

  it('the repository outlives its last manifest: MANIFEST_UNKNOWN, no tags, and it takes manifests again', async () => {
    const body = await image();
    await manifests.put(name, { tag: 'only' }, OCI_MANIFEST, body);
    await manifests.delete(name, sha256(body));
    await rejectsWith(manifests.get(name, { tag: 'only' }), ['MANIFEST_UNKNOWN']);
    await rejectsWith(manifests.get(name, { digest: sha256(body) }), ['MANIFEST_UNKNOWN']);
    assert.deepEqual(await tags.list(name), []);
    await manifests.put(name, { tag: 'again' }, OCI_MANIFEST, body);
    assert.deepEqual(await tags.list(name), ['again']);
  });

  describe('referrers', () => {
    it('lists the manifests whose subject is a digest, filtered by artifactType; a delete removes the entry', async () => {
      const subject = await image();
      await manifests.put(name, { tag: 'v1' }, OCI_MANIFEST, subject);
      const ref = { digest: sha256(subject), size: subject.length };
      const signature = await image(name, { subject: ref, artifactType: 'application/vnd.example.signature' });
      const sbom = await image(name, { subject: ref, artifactType: 'application/vnd.example.sbom' });
      for (const body of [signature, sbom]) {
        const parsed = await manifests.put(name, { digest: sha256(body) }, OCI_MANIFEST, body);
        assert.equal(parsed.subject?.digest, ref.digest);
      }
      const all = await manifests.referrers(name, ref.digest);
      assert.deepEqual(
        all.map((d) => [d.digest, d.artifactType, d.size, d.mediaType]).sort(),
        [
          [sha256(signature), 'application/vnd.example.signature', signature.length, OCI_MANIFEST],
          [sha256(sbom), 'application/vnd.example.sbom', sbom.length, OCI_MANIFEST],
        ].sort(),
      );
      assert.deepEqual(
        (await manifests.referrers(name, ref.digest, 'application/vnd.example.sbom')).map((d) => d.digest),
        [sha256(sbom)],
      );
      await manifests.delete(name, sha256(signature));
      assert.deepEqual(
        (await manifests.referrers(name, ref.digest)).map((d) => d.digest),
        [sha256(sbom)],
      );
      await assert.rejects(driver.stat(layout.referrerDir(name, ref.digest, sha256(signature))));
    });

    it('a subject that was never pushed may have referrers; an unknown subject has none; an unknown repository has none (never NAME_UNKNOWN)', async () => {
      const absent = { digest: sha256('not pushed'), size: 10 };
      const body = await image(name, { subject: absent, artifactType: 'application/vnd.example.signature' });
      await manifests.put(name, { digest: sha256(body) }, OCI_MANIFEST, body);
      assert.deepEqual(
        (await manifests.referrers(name, absent.digest)).map((d) => d.digest),
        [sha256(body)],
      );
      assert.deepEqual(await manifests.referrers(name, sha256('nobody points here')), []);
      assert.deepEqual(await manifests.referrers('lib/other', absent.digest), []);
    });
  });
});
