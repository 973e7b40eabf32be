// berth and Debian's docker-registry (CNCF Distribution 2.8.2+ds1) run side by side on ONE
// filesystem root (DESIGN.md section 3). A manifest pushed through one of them, by tag, must be
// served by the other: the same bytes by tag and by digest, the same Content-Type and
// Docker-Content-Digest, HEAD with the right Content-Length, the tag in tags/list; a DELETE by
// digest on either must remove it (and its tags) for both.
//
// What the reference does differently, observed with 2.8.2 and asserted below:
// - It negotiates on Accept: a schema2 manifest fetched by tag without Accept is converted to
//   schema1 (and fails with 400 MANIFEST_INVALID for these images), an OCI one is 404. Every GET
//   here therefore sends an Accept naming every manifest type. berth ignores Accept.
// - It refuses the spec's neutral Content-Type `application/vnd.registry.distribution.manifest.v2+json`
//   (400 MANIFEST_INVALID). berth accepts it and records it in berth.json: the reference then
//   serves such a manifest with the type named in its body (application/vnd.docker...), berth with
//   the neutral type; a body whose own `mediaType` is the neutral one makes the reference answer
//   500 UNKNOWN on GET.
// - The withdrawn OCI artifact manifest (application/vnd.oci.artifact.manifest.v1+json) is refused
//   by both (400 MANIFEST_INVALID). An image manifest with `artifactType` and `subject` (OCI 1.1)
//   is accepted by both and round-trips byte for byte; only berth answers OCI-Subject on the PUT
//   and has a referrers API (the reference: 404 page not found).
// - Signed schema1: with its defaults the reference refuses the push (500 UNKNOWN, logged as
//   "manifest schema v1 unsupported") but still serves schema1 revisions written by berth. It keeps
//   only the JWS payload and serves it re-signed with its own key on every GET, so its bytes differ
//   from what was pushed; the digest (of the payload) is the same on both.
// - For a repository that holds blobs but no manifest, berth answers a manifest GET with 404
//   NAME_UNKNOWN (a repository exists once it has a _manifests directory), the reference with 404
//   MANIFEST_UNKNOWN.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { indexDifferences, reconcileNow } from '../helpers/index-sync.js';
import { pushBlob, randomBlob, sha256 } from '../helpers/blobs.js';
import { startReferenceRegistry, type ReferenceRegistry } from '../helpers/reference-registry.js';
import { assertTool, needTool } from '../helpers/tools.js';
import { generateKey, signSchema1 } from '../registry/manifests/sign-schema1.js';

type Kind = 'berth' | 'reference';

const T = {
  dockerManifest: 'application/vnd.docker.distribution.manifest.v2+json',
  dockerList: 'application/vnd.docker.distribution.manifest.list.v2+json',
  neutralManifest: 'application/vnd.registry.distribution.manifest.v2+json',
  signedSchema1: 'application/vnd.docker.distribution.manifest.v1+prettyjws',
  unsignedSchema1: 'application/vnd.docker.distribution.manifest.v1+json',
  ociManifest: 'application/vnd.oci.image.manifest.v1+json',
  ociIndex: 'application/vnd.oci.image.index.v1+json',
  ociArtifact: 'application/vnd.oci.artifact.manifest.v1+json',
  dockerConfig: 'application/vnd.docker.container.image.v1+json',
  dockerLayer: 'application/vnd.docker.image.rootfs.diff.tar.gzip',
  ociConfig: 'application/vnd.oci.image.config.v1+json',
  ociLayer: 'application/vnd.oci.image.layer.v1.tar+gzip',
  ociEmpty: 'application/vnd.oci.empty.v1+json',
} as const;

/** what a client that knows every format sends; the reference needs it (see the top of the file) */
const ACCEPT = [T.dockerManifest, T.dockerList, T.ociManifest, T.ociIndex, T.signedSchema1].join(', ');

const EMPTY_JSON = Buffer.from('{}');

interface Pushed {
  body: Buffer<ArrayBuffer>;
  /** the Content-Type it is pushed with */
  mediaType: string;
  digest: string;
}

interface Case {
  /** pushed first, to the manifest's repository */
  blobs: Buffer<ArrayBuffer>[];
  /** manifests pushed by digest before `manifest` (an index's children, an artifact's subject) */
  children: Pushed[];
  manifest: Pushed;
  /** the subject digest, for artifacts */
  subject?: string;
}

/** JSON as docker and Distribution write it: three-space indent */
function manifestOf(doc: object, mediaType: string): Pushed {
  const body = Buffer.from(JSON.stringify(doc, null, 3));
  return { body, mediaType, digest: sha256(body) };
}

const descriptor = (mediaType: string, data: Buffer) => ({ mediaType, size: data.length, digest: sha256(data) });

function imageCase(style: 'docker' | 'oci'): Case {
  const config = Buffer.from(JSON.stringify({ architecture: 'amd64', os: 'linux', rootfs: { type: 'layers', diff_ids: [] }, comment: randomBytes(8).toString('hex') }));
  const layer = randomBlob(1500).data;
  const docker = style === 'docker';
  const manifest = manifestOf(
    {
      schemaVersion: 2,
      mediaType: docker ? T.dockerManifest : T.ociManifest,
      config: descriptor(docker ? T.dockerConfig : T.ociConfig, config),
      layers: [descriptor(docker ? T.dockerLayer : T.ociLayer, layer)],
    },
    docker ? T.dockerManifest : T.ociManifest,
  );
  return { blobs: [config, layer], children: [], manifest };
}

function indexCase(style: 'docker' | 'oci'): Case {
  const amd64 = imageCase(style);
  const arm64 = imageCase(style);
  const type = style === 'docker' ? T.dockerList : T.ociIndex;
  const manifest = manifestOf(
    {
      schemaVersion: 2,
      mediaType: type,
      manifests: [
        { ...descriptor(amd64.manifest.mediaType, amd64.manifest.body), platform: { architecture: 'amd64', os: 'linux' } },
        { ...descriptor(arm64.manifest.mediaType, arm64.manifest.body), platform: { architecture: 'arm64', os: 'linux', variant: 'v8' } },
      ],
    },
    type,
  );
  return { blobs: [...amd64.blobs, ...arm64.blobs], children: [amd64.manifest, arm64.manifest], manifest };
}

/** OCI 1.1: an image manifest on the empty config with artifactType and subject, as oras attach pushes it */
function artifactCase(): Case {
  const subject = imageCase('oci');
  const sbom = Buffer.from(JSON.stringify({ spdxVersion: 'SPDX-2.3', name: randomBytes(8).toString('hex') }));
  const manifest = manifestOf(
    {
      schemaVersion: 2,
      mediaType: T.ociManifest,
      artifactType: 'application/spdx+json',
      config: { ...descriptor(T.ociEmpty, EMPTY_JSON), data: 'e30=' },
      layers: [descriptor('application/spdx+json', sbom)],
      subject: descriptor(T.ociManifest, subject.manifest.body),
      annotations: { 'org.opencontainers.image.created': '2024-03-01T10:00:00Z' },
    },
    T.ociManifest,
  );
  return { blobs: [...subject.blobs, EMPTY_JSON, sbom], children: [subject.manifest], manifest, subject: subject.manifest.digest };
}

async function errorCode(res: Response): Promise<string | undefined> {
  const text = await res.text();
  try {
    return (JSON.parse(text) as { errors: { code: string }[] }).errors[0]?.code;
  } catch {
    return `non-JSON body: ${text.slice(0, 200)}`;
  }
}

/** PUT /v2/<repo>/manifests/<reference>; asserts 201 with the digest and Location */
async function putManifest(base: string, kind: Kind, repo: string, reference: string, m: Pushed): Promise<Response> {
  const res = await fetch(`${base}/v2/${repo}/manifests/${reference}`, { method: 'PUT', body: m.body, headers: { 'content-type': m.mediaType } });
  assert.equal(res.status, 201, `PUT ${repo}:${reference} (${m.mediaType}) on ${kind}: ${await res.clone().text()}`);
  assert.equal(res.headers.get('docker-content-digest'), m.digest, `PUT digest on ${kind}`);
  assert.equal(new URL(res.headers.get('location') ?? '', base).pathname, `/v2/${repo}/manifests/${m.digest}`, `PUT Location on ${kind}`);
  return res;
}

async function pushBlobs(base: string, kind: Kind, repo: string, blobs: Buffer<ArrayBuffer>[]): Promise<void> {
  for (const data of blobs) {
    const res = await pushBlob(base, repo, data);
    assert.equal(res.status, 201, `blob PUT on ${kind}: ${await res.text()}`);
  }
}

async function getManifest(base: string, repo: string, reference: string, method = 'GET'): Promise<Response> {
  return fetch(`${base}/v2/${repo}/manifests/${reference}`, { method, headers: { accept: ACCEPT } });
}

interface Expect {
  /** the Content-Type served (default: the one pushed) */
  contentType?: string;
  /** the bytes served (default: the ones pushed); a function checks them instead */
  body?: Buffer | ((served: Buffer) => void);
}

/** `base` serves `m` by `tag` (when given) and by digest: GET with bytes, type and digest; HEAD with the length */
async function assertManifestServed(base: string, kind: Kind, repo: string, tag: string | undefined, m: Pushed, expect: Expect = {}): Promise<Buffer> {
  const contentType = expect.contentType ?? m.mediaType;
  let served: Buffer | undefined;
  for (const reference of tag === undefined ? [m.digest] : [tag, m.digest]) {
    const what = `${repo}:${reference} on ${kind}`;
    const get = await getManifest(base, repo, reference);
    const body = Buffer.from(await get.arrayBuffer());
    assert.equal(get.status, 200, `GET ${what}: ${body.toString().slice(0, 300)}`);
    assert.equal(get.headers.get('content-type'), contentType, `Content-Type of GET ${what}`);
    assert.equal(get.headers.get('docker-content-digest'), m.digest, `Docker-Content-Digest of GET ${what}`);
    assert.equal(get.headers.get('content-length'), String(body.length), `Content-Length of GET ${what}`);
    if (typeof expect.body === 'function') expect.body(body);
    else assert.ok(body.equals(expect.body ?? m.body), `GET ${what} sends the exact bytes (got ${body.length} bytes, ${sha256(body)})`);

    const head = await getManifest(base, repo, reference, 'HEAD');
    assert.equal(head.status, 200, `HEAD ${what}`);
    assert.equal(head.headers.get('content-length'), String(body.length), `Content-Length of HEAD ${what}`);
    assert.equal(head.headers.get('content-type'), contentType, `Content-Type of HEAD ${what}`);
    assert.equal(head.headers.get('docker-content-digest'), m.digest, `Docker-Content-Digest of HEAD ${what}`);
    assert.equal((await head.arrayBuffer()).byteLength, 0);
    served = body;
  }
  return served!;
}

/** 404 MANIFEST_UNKNOWN (or `code`) for GET by each reference, 404 for HEAD */
async function assertManifestUnknown(base: string, kind: Kind, repo: string, references: string[], code = 'MANIFEST_UNKNOWN'): Promise<void> {
  for (const reference of references) {
    const get = await getManifest(base, repo, reference);
    assert.equal(get.status, 404, `GET ${repo}:${reference} on ${kind}`);
    assert.equal(await errorCode(get), code, `GET ${repo}:${reference} on ${kind}`);
    const head = await getManifest(base, repo, reference, 'HEAD');
    assert.equal(head.status, 404, `HEAD ${repo}:${reference} on ${kind}`);
    await head.arrayBuffer();
  }
}

/**
 * The tags `base` lists for `repo`, or undefined when berth does not list tags yet (405
 * UNSUPPORTED "... not implemented"): that one check is then skipped. The reference answers
 * `"tags": null` for a repository whose tags were all deleted.
 */
async function listTags(base: string, kind: Kind, repo: string): Promise<string[] | undefined> {
  // berth lists from its metadata index: what Distribution wrote is there once the reconciler ran
  if (kind === 'berth' && indexed) await reconcileNow(indexed);
  const res = await fetch(`${base}/v2/${repo}/tags/list`);
  const text = await res.text();
  if (kind === 'berth' && res.status === 405) {
    const error = (JSON.parse(text) as { errors: { code: string; message: string }[] }).errors[0];
    if (error?.code === 'UNSUPPORTED' && error.message.includes('not implemented')) return undefined; // not wired yet: skip
  }
  assert.equal(res.status, 200, `tags/list of ${repo} on ${kind}: ${text}`);
  const body = JSON.parse(text) as { name: string; tags: string[] | null };
  assert.equal(body.name, repo);
  return body.tags ?? [];
}

async function assertTagListed(base: string, kind: Kind, repo: string, tag: string, listed: boolean): Promise<void> {
  const tags = await listTags(base, kind, repo);
  if (tags === undefined) return; // berth's tags/list is not implemented yet
  assert.equal(tags.includes(tag), listed, `${tag} ${listed ? 'in' : 'not in'} the tags of ${repo} on ${kind}: ${JSON.stringify(tags)}`);
}

/** the berth under test, whose reconciler runs before berth lists tags */
let indexed: TestRegistry | undefined;

async function exists(path: string): Promise<boolean> {
  try {
    await stat(path);
    return true;
  } catch {
    return false;
  }
}

describe(
  "A manifest pushed by berth is served by Debian's docker-registry on the same storage root and the other way round",
  needTool('docker-registry', 'the shared-root interop test'),
  () => {
    let root: string | undefined;
    let berth: TestRegistry | undefined;
    let ref: ReferenceRegistry | undefined;
    /** a second reference on the same root, with compatibility.schema1.enabled */
    let refSchema1: ReferenceRegistry | undefined;
    const B = () => (assert.ok(berth, 'berth started'), berth.url);
    const R = () => (assert.ok(ref, 'reference registry started'), ref.url);
    const R1 = () => (assert.ok(refSchema1, 'schema1-enabled reference registry started'), refSchema1.url);
    const on = (kind: Kind) => (kind === 'berth' ? B() : R());
    const other = (kind: Kind): Kind => (kind === 'berth' ? 'reference' : 'berth');
    const repoDir = (repo: string) => join(root!, 'docker', 'registry', 'v2', 'repositories', repo);
    const revisionDir = (repo: string, digest: string) => join(repoDir(repo), '_manifests', 'revisions', 'sha256', digest.slice('sha256:'.length));

    /** Distribution's layout: content under blobs/, the revision link, the tag's current and index links */
    async function assertOnDisk(repo: string, tag: string, m: Pushed, content: Buffer = m.body): Promise<void> {
      const hex = m.digest.slice('sha256:'.length);
      const v2 = join(root!, 'docker', 'registry', 'v2');
      assert.deepEqual(await readFile(join(v2, 'blobs', 'sha256', hex.slice(0, 2), hex, 'data')), content, 'manifest content under blobs/');
      assert.equal((await readFile(join(revisionDir(repo, m.digest), 'link'))).toString(), m.digest, 'revision link');
      const tagDir = join(repoDir(repo), '_manifests', 'tags', tag);
      assert.equal((await readFile(join(tagDir, 'current', 'link'))).toString(), m.digest, 'tag current link');
      assert.equal((await readFile(join(tagDir, 'index', 'sha256', hex, 'link'))).toString(), m.digest, 'tag index link');
    }

    async function deleteManifest(kind: Kind, repo: string, digest: string): Promise<void> {
      const res = await fetch(`${on(kind)}/v2/${repo}/manifests/${digest}`, { method: 'DELETE' });
      assert.equal(res.status, 202, `DELETE ${repo}@${digest} on ${kind}: ${await res.text()}`);
    }

    /** deleted on `deleter`: unknown on both by digest and tag, the tag unlisted, a second DELETE on the other 404 */
    async function assertDeletedForBoth(deleter: Kind, repo: string, tag: string, digest: string): Promise<void> {
      for (const kind of ['reference', 'berth'] as const) {
        await assertManifestUnknown(on(kind), kind, repo, [digest, tag]);
        await assertTagListed(on(kind), kind, repo, tag, false);
      }
      assert.equal(await exists(join(repoDir(repo), '_manifests', 'tags', tag)), false, 'the tag directory is gone');
      const again = await fetch(`${on(other(deleter))}/v2/${repo}/manifests/${digest}`, { method: 'DELETE' });
      assert.equal(again.status, 404, `second DELETE on ${other(deleter)}`);
      assert.equal(await errorCode(again), 'MANIFEST_UNKNOWN');
    }

    before(async () => {
      assertTool('docker-registry', 'the shared-root interop test'); // fails clearly in CI when missing
      root = await mkdtemp(join(tmpdir(), 'berth-interop-manifests-'));
      berth = await startBerth({ metadata: {} }, { root }); // deletes enabled by the test default
      indexed = berth;
      ref = await startReferenceRegistry({ rootdirectory: root, deleteEnabled: true, config: { log: { level: 'warn' } } });
      refSchema1 = await startReferenceRegistry({
        rootdirectory: root,
        deleteEnabled: true,
        config: { log: { level: 'warn' }, compatibility: { schema1: { enabled: true } } },
      });
    });

    after(async () => {
      // each stop runs even if another throws; the shared root goes last
      const results = await Promise.allSettled([berth?.stop(), ref?.stop(), refSchema1?.stop()]);
      if (root) await rm(root, { recursive: true, force: true });
      for (const r of results) if (r.status === 'rejected') throw r.reason;
    });

    const FORMATS: [slug: string, title: string, make: () => Case][] = [
      ['schema2', 'docker schema2 image manifest', () => imageCase('docker')],
      ['list', 'docker manifest list (children pushed first)', () => indexCase('docker')],
      ['oci', 'OCI image manifest', () => imageCase('oci')],
      ['oci-index', 'OCI image index (children pushed first)', () => indexCase('oci')],
      ['artifact', 'OCI 1.1 artifact: image manifest with artifactType and subject', artifactCase],
    ];

    for (const [slug, title, make] of FORMATS) {
      describe(title, () => {
        for (const pusher of ['berth', 'reference'] as const) {
          const reader = other(pusher);
          it(`pushed to ${pusher}, served by both, deleted on ${reader}`, async () => {
            const repo = `interop/${slug}-from-${pusher}`;
            const tag = 'v1';
            const c = make();
            await pushBlobs(on(pusher), pusher, repo, c.blobs);
            for (const child of c.children) await putManifest(on(pusher), pusher, repo, child.digest, child);
            const put = await putManifest(on(pusher), pusher, repo, tag, c.manifest);
            // only berth answers OCI-Subject (OCI 1.1); the reference predates it
            assert.equal(put.headers.get('oci-subject'), pusher === 'berth' ? (c.subject ?? null) : null);

            await assertOnDisk(repo, tag, c.manifest);
            // berth records the pushed type beside the revision link; the reference writes no such file
            assert.equal(await exists(join(revisionDir(repo, c.manifest.digest), 'berth.json')), pusher === 'berth');

            for (const kind of [reader, pusher]) {
              await assertManifestServed(on(kind), kind, repo, tag, c.manifest);
              for (const child of c.children) await assertManifestServed(on(kind), kind, repo, undefined, child);
              await assertTagListed(on(kind), kind, repo, tag, true);
            }

            await deleteManifest(reader, repo, c.manifest.digest);
            await assertDeletedForBoth(reader, repo, tag, c.manifest.digest);
            // only the tagged manifest went: its children (or subject) are still served by both
            for (const child of c.children) {
              for (const kind of [reader, pusher]) await assertManifestServed(on(kind), kind, repo, undefined, child);
            }
          });
        }
      });
    }

    describe('the withdrawn OCI artifact manifest (application/vnd.oci.artifact.manifest.v1+json)', () => {
      for (const kind of ['berth', 'reference'] as const) {
        it(`is refused by ${kind}: 400 MANIFEST_INVALID, nothing stored`, async () => {
          const repo = `interop/artifact-manifest-${kind}`;
          const subject = imageCase('oci');
          const sbom = Buffer.from(JSON.stringify({ spdxVersion: 'SPDX-2.3', name: randomBytes(8).toString('hex') }));
          await pushBlobs(on(kind), kind, repo, [...subject.blobs, sbom]);
          await putManifest(on(kind), kind, repo, subject.manifest.digest, subject.manifest);
          const m = manifestOf(
            { mediaType: T.ociArtifact, artifactType: 'application/spdx+json', blobs: [descriptor('application/spdx+json', sbom)], subject: descriptor(T.ociManifest, subject.manifest.body) },
            T.ociArtifact,
          );
          const res = await fetch(`${on(kind)}/v2/${repo}/manifests/sbom`, { method: 'PUT', body: m.body, headers: { 'content-type': m.mediaType } });
          assert.equal(res.status, 400);
          assert.equal(await errorCode(res), 'MANIFEST_INVALID');
          for (const k of ['berth', 'reference'] as const) await assertManifestUnknown(on(k), k, repo, ['sbom', m.digest]);
        });
      }
    });

    describe("the spec's neutral media type application/vnd.registry.distribution.manifest.v2+json", () => {
      function neutralCase(bodyType: string): Case {
        const c = imageCase('docker');
        const doc = JSON.parse(c.manifest.body.toString()) as Record<string, unknown>;
        doc.mediaType = bodyType;
        return { ...c, manifest: manifestOf(doc, T.neutralManifest) };
      }

      it('as Content-Type (body says vnd.docker): berth serves the neutral type, the reference the docker one; deleted on the reference', async () => {
        const repo = 'interop/neutral-ct-from-berth';
        const c = neutralCase(T.dockerManifest);
        await pushBlobs(B(), 'berth', repo, c.blobs);
        await putManifest(B(), 'berth', repo, 'v1', c.manifest);
        await assertOnDisk(repo, 'v1', c.manifest);
        const meta = JSON.parse((await readFile(join(revisionDir(repo, c.manifest.digest), 'berth.json'))).toString()) as { mediaType: string };
        assert.equal(meta.mediaType, T.neutralManifest);

        await assertManifestServed(B(), 'berth', repo, 'v1', c.manifest, { contentType: T.neutralManifest });
        // Observed: the reference reads the type from the body and serves the same bytes as vnd.docker
        await assertManifestServed(R(), 'reference', repo, 'v1', c.manifest, { contentType: T.dockerManifest });
        await assertTagListed(R(), 'reference', repo, 'v1', true);

        await deleteManifest('reference', repo, c.manifest.digest);
        await assertDeletedForBoth('reference', repo, 'v1', c.manifest.digest);
      });

      it('as Content-Type and in the body: berth serves it, the reference answers 500 UNKNOWN; deleted on berth', async () => {
        const repo = 'interop/neutral-body-from-berth';
        const c = neutralCase(T.neutralManifest);
        await pushBlobs(B(), 'berth', repo, c.blobs);
        await putManifest(B(), 'berth', repo, 'v1', c.manifest);
        await assertOnDisk(repo, 'v1', c.manifest);
        await assertManifestServed(B(), 'berth', repo, 'v1', c.manifest, { contentType: T.neutralManifest });
        // Observed: Distribution 2.8 does not know the type in the body ("unrecognized manifest
        // content type"): 500 UNKNOWN by tag and by digest. The tag itself is listed.
        for (const reference of ['v1', c.manifest.digest]) {
          const res = await getManifest(R(), repo, reference);
          assert.equal(res.status, 500, `GET ${reference} on the reference`);
          assert.equal(await errorCode(res), 'UNKNOWN');
        }
        await assertTagListed(R(), 'reference', repo, 'v1', true);

        await deleteManifest('berth', repo, c.manifest.digest);
        await assertDeletedForBoth('berth', repo, 'v1', c.manifest.digest);
      });

      it('is refused as Content-Type by the reference: 400 MANIFEST_INVALID, nothing stored', async () => {
        const repo = 'interop/neutral-ct-from-ref';
        const c = neutralCase(T.dockerManifest);
        await pushBlobs(R(), 'reference', repo, c.blobs);
        const res = await fetch(`${R()}/v2/${repo}/manifests/v1`, { method: 'PUT', body: c.manifest.body, headers: { 'content-type': T.neutralManifest } });
        assert.equal(res.status, 400);
        assert.equal(await errorCode(res), 'MANIFEST_INVALID');
        // the repository holds blobs but no manifest: berth answers NAME_UNKNOWN for it, the reference MANIFEST_UNKNOWN
        for (const k of ['berth', 'reference'] as const) await assertManifestUnknown(on(k), k, repo, ['v1', c.manifest.digest], k === 'berth' ? 'NAME_UNKNOWN' : 'MANIFEST_UNKNOWN');
      });

      it(
        'a revision berth wrote, deleted and pushed again by the reference, is served by berth with the type the reference was given',
        {
          todo:
            "berth bug: Distribution's DELETE removes only the revision's `link`, berth.json stays behind; " +
            'when the same bytes are pushed again through the reference (as vnd.docker), berth trusts the stale berth.json and serves the neutral type',
        },
        async () => {
          const repo = 'interop/neutral-stale-meta';
          const c = neutralCase(T.dockerManifest);
          await pushBlobs(B(), 'berth', repo, c.blobs);
          await putManifest(B(), 'berth', repo, 'v1', c.manifest);
          await deleteManifest('reference', repo, c.manifest.digest);
          await assertManifestUnknown(B(), 'berth', repo, [c.manifest.digest]);
          // Observed: berth.json survives the reference's delete
          assert.ok(await exists(join(revisionDir(repo, c.manifest.digest), 'berth.json')), 'berth.json left behind');

          const again: Pushed = { ...c.manifest, mediaType: T.dockerManifest };
          await putManifest(R(), 'reference', repo, 'v2', again);
          await assertManifestServed(R(), 'reference', repo, 'v2', again);
          await assertManifestServed(B(), 'berth', repo, 'v2', again); // observed: Content-Type is the neutral one
        },
      );
    });

    describe("berth's referrers API for manifests the reference writes or deletes", () => {
      async function referrerDigests(repo: string, subject: string): Promise<string[]> {
        const res = await fetch(`${B()}/v2/${repo}/referrers/${subject}`);
        assert.equal(res.status, 200, `referrers on berth: ${await res.clone().text()}`);
        return ((await res.json()) as { manifests: { digest: string }[] }).manifests.map((d) => d.digest);
      }

      async function pushArtifact(kind: Kind, repo: string): Promise<Case> {
        const c = artifactCase();
        await pushBlobs(on(kind), kind, repo, c.blobs);
        for (const child of c.children) await putManifest(on(kind), kind, repo, child.digest, child);
        await putManifest(on(kind), kind, repo, 'sbom', c.manifest);
        return c;
      }

      it('the reference has no referrers API: 404', async () => {
        const repo = 'interop/referrers-none-on-ref';
        const c = await pushArtifact('berth', repo);
        assert.deepEqual(await referrerDigests(repo, c.subject!), [c.manifest.digest]);
        const res = await fetch(`${R()}/v2/${repo}/referrers/${c.subject}`);
        assert.equal(res.status, 404);
        await res.arrayBuffer();
      });

      it(
        'an artifact pushed to berth and deleted on the reference leaves berth\'s referrers list',
        async () => {
          const repo = 'interop/referrers-deleted-on-ref';
          const c = await pushArtifact('berth', repo);
          await deleteManifest('reference', repo, c.manifest.digest);
          await assertManifestUnknown(B(), 'berth', repo, [c.manifest.digest]);
          assert.deepEqual(await referrerDigests(repo, c.subject!), []); // observed: still [c.manifest.digest]
        },
      );

      it(
        "an artifact pushed to the reference is in berth's referrers list",
        {
          todo:
            'berth limitation: the referrers index is written only by berth\'s PUT, so a manifest with `subject` written by ' +
            'Distribution on the shared root is served by berth but never listed as a referrer',
        },
        async () => {
          const repo = 'interop/referrers-pushed-to-ref';
          const c = await pushArtifact('reference', repo);
          await assertManifestServed(B(), 'berth', repo, 'sbom', c.manifest);
          assert.deepEqual(await referrerDigests(repo, c.subject!), [c.manifest.digest]); // observed: []
        },
      );
    });

    describe('signed schema1', () => {
      /** a signed first-generation manifest of one pushed layer, named for `repo`:`tag` */
      function schema1Case(repo: string, tag: string): { layer: Buffer<ArrayBuffer>; signed: Pushed; payload: Buffer } {
        const layer = randomBlob(1200).data;
        const { body, payload } = signSchema1(
          {
            schemaVersion: 1,
            name: repo,
            tag,
            architecture: 'amd64',
            fsLayers: [{ blobSum: sha256(layer) }],
            history: [{ v1Compatibility: JSON.stringify({ id: randomBytes(32).toString('hex'), created: '2024-03-01T10:00:00Z' }) }],
          },
          [{ key: generateKey('P-256') }],
        );
        // the manifest's digest is that of the JWS payload, not of the signed bytes
        return { layer, signed: { body: Buffer.from(body), mediaType: T.signedSchema1, digest: sha256(payload) }, payload };
      }

      const withoutSignatures = (body: Buffer) => {
        const doc = JSON.parse(body.toString()) as Record<string, unknown>;
        delete doc.signatures;
        return doc;
      };
      /** the part of a payload a pretty JWS keeps verbatim: up to the whitespace before its closing brace */
      const formatted = (payload: Buffer) => {
        let end = payload.lastIndexOf('}');
        while (end > 0 && ' \t\r\n'.includes(String.fromCharCode(payload[end - 1]))) end--;
        return payload.subarray(0, end);
      };
      const jwkOf = (body: Buffer) => (JSON.parse(body.toString()) as { signatures: { header: { jwk: unknown } }[] }).signatures.map((s) => s.header.jwk);

      it('is refused by the reference with its defaults: 500 UNKNOWN, nothing stored', async () => {
        const repo = 'interop/schema1-refused';
        const s = schema1Case(repo, 'v1');
        await pushBlobs(R(), 'reference', repo, [s.layer]);
        const res = await fetch(`${R()}/v2/${repo}/manifests/v1`, { method: 'PUT', body: s.signed.body, headers: { 'content-type': s.signed.mediaType } });
        // Observed: Distribution 2.8 disables schema1 pushes by default (compatibility.schema1.enabled)
        // and reports it as a 500 UNKNOWN, logging "manifest schema v1 unsupported"
        assert.equal(res.status, 500);
        assert.equal(await errorCode(res), 'UNKNOWN');
        // the repository holds blobs but no manifest: berth answers NAME_UNKNOWN for it, the reference MANIFEST_UNKNOWN
        for (const k of ['berth', 'reference'] as const) await assertManifestUnknown(on(k), k, repo, ['v1', s.signed.digest], k === 'berth' ? 'NAME_UNKNOWN' : 'MANIFEST_UNKNOWN');
      });

      it('pushed to berth: the reference serves the same payload re-signed with its own key; deleted on the reference', async () => {
        const repo = 'interop/schema1-from-berth';
        const s = schema1Case(repo, 'v1');
        await pushBlobs(B(), 'berth', repo, [s.layer]);
        await putManifest(B(), 'berth', repo, 'v1', s.signed);
        // content under blobs/ is the payload (what Distribution stores); berth keeps the signed bytes in a second blob
        await assertOnDisk(repo, 'v1', s.signed, s.payload);

        await assertManifestServed(B(), 'berth', repo, 'v1', s.signed);
        await assertManifestServed(R(), 'reference', repo, 'v1', s.signed, {
          body: (served) => {
            // Observed: the reference serves the payload signed on the fly by its own key, not the pushed bytes
            const kept = formatted(s.payload);
            assert.ok(served.subarray(0, kept.length).equals(kept), 'it starts with the formatted payload');
            assert.deepEqual(withoutSignatures(served), JSON.parse(s.payload.toString()));
            assert.notDeepEqual(jwkOf(served), jwkOf(s.signed.body), 'signed by another key');
          },
        });
        await assertTagListed(R(), 'reference', repo, 'v1', true);

        await deleteManifest('reference', repo, s.signed.digest);
        await assertDeletedForBoth('reference', repo, 'v1', s.signed.digest);
      });

      it('pushed to a reference with compatibility.schema1.enabled: berth serves it by tag and digest; deleted on berth', async () => {
        const repo = 'interop/schema1-from-ref';
        const s = schema1Case(repo, 'v1');
        await pushBlobs(R1(), 'reference', repo, [s.layer]);
        await putManifest(R1(), 'reference', repo, 'v1', s.signed);
        // Distribution keeps only the payload
        await assertOnDisk(repo, 'v1', s.signed, s.payload);
        assert.equal(await exists(join(revisionDir(repo, s.signed.digest), 'berth.json')), false);

        for (const [base, kind] of [[R1(), 'reference'], [B(), 'berth']] as const) {
          await assertManifestServed(base, kind, repo, 'v1', s.signed, {
            // the reference re-signs with its own key; berth serves the stored payload as the unsigned type
            contentType: kind === 'berth' ? T.unsignedSchema1 : undefined,
            body: (served) => assert.deepEqual(withoutSignatures(served), JSON.parse(s.payload.toString())),
          });
        }
        await assertTagListed(R1(), 'reference', repo, 'v1', true);
        await assertTagListed(B(), 'berth', repo, 'v1', true);

        await deleteManifest('berth', repo, s.signed.digest);
        for (const kind of ['reference', 'berth'] as const) {
          await assertManifestUnknown(kind === 'berth' ? B() : R1(), kind, repo, [s.signed.digest, 'v1']);
          await assertTagListed(kind === 'berth' ? B() : R1(), kind, repo, 'v1', false);
        }
      });

      it(
        'pushed to the reference: what berth serves agrees with its Content-Type (signed prettyjws, or the unsigned v1+json type)',
        async () => {
          const repo = 'interop/schema1-from-ref-signed';
          const s = schema1Case(repo, 'v1');
          await pushBlobs(R1(), 'reference', repo, [s.layer]);
          await putManifest(R1(), 'reference', repo, 'v1', s.signed);
          const res = await getManifest(B(), repo, 'v1');
          assert.equal(res.status, 200);
          const type = res.headers.get('content-type');
          const served = Buffer.from(await res.arrayBuffer());
          if (type === T.signedSchema1) {
            const signatures = (JSON.parse(served.toString()) as { signatures?: unknown[] }).signatures;
            assert.ok(Array.isArray(signatures) && signatures.length > 0, `served as ${type} without signatures: ${served.length} bytes`);
          } else {
            assert.equal(type, T.unsignedSchema1);
          }
        },
      );
    });

    it("berth's metadata index equals storage once its reconciler ran over the references' pushes and deletes", async () => {
      await reconcileNow(berth!);
      assert.deepEqual(await indexDifferences(berth!), []);
    });
  },
);
