/**
 * Manifests over HTTP (spec 2.3, 3.2, 4.3–4.5, 7): PUT, GET, HEAD and DELETE of every manifest
 * format, against the real server on both storage drivers.
 */
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { createApp } from '../../src/app.js';
import { validateConfig } from '../../src/config/load.js';
import { merge, startBerth, type Overrides, type TestRegistry } from '../helpers/berth.js';
import { pushBlob, rawRequest, sha256 } from '../helpers/blobs.js';
import { buildImage, IMAGE_KINDS, isIndexKind, ManifestTypes, pushContent, pushImage, pushImageOK, putManifest, type Image, type ImageKind } from '../helpers/images.js';

/** the HTTP behaviour; S3 semantics are the driver suite's and the S3 files' (test/storage/s3.test.ts, test/http/s3-redirects.test.ts) */
const DRIVERS = ['filesystem', 'inmemory'] as const;
type Driver = (typeof DRIVERS)[number];
const LIMIT = 4 * 1024 * 1024;

interface ErrorBody {
  code: string;
  message: string;
  detail?: Record<string, unknown>;
}

async function errorsOf(res: Response): Promise<ErrorBody[]> {
  assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
  const body = (await res.json()) as { errors: ErrorBody[] };
  assert.ok(Array.isArray(body.errors) && body.errors.length > 0, 'an error body with errors[]');
  return body.errors;
}

/** asserts status and the single error code, returning the error */
async function expectError(res: Response, status: number, code: string): Promise<ErrorBody> {
  const errors = await errorsOf(res);
  assert.equal(res.status, status, `status (errors: ${JSON.stringify(errors)})`);
  assert.deepEqual(
    errors.map((e) => e.code),
    [code],
  );
  return errors[0];
}

/** a second server over the storage of `registry` with other settings (read-only, deletes off) */
async function startSibling(registry: TestRegistry, driver: Driver, overrides: Overrides): Promise<{ url: string; stop(): Promise<void> }> {
  if (driver === 'filesystem') return startBerth(overrides, { driver, root: registry.root });
  const base: Overrides = {
    version: '0.1',
    log: { level: 'error', accesslog: { disabled: true } },
    storage: { inmemory: {}, delete: { enabled: true } },
    http: { addr: '127.0.0.1:0', secret: 'test-secret' },
  };
  const app = await createApp(validateConfig(merge(base, overrides), 'test'), { logger: pino({ level: 'silent' }), driver: registry.app.driver });
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  return { url, stop: () => app.close() };
}

/** a Content-Type naming another format than `kind`'s */
const OTHER_FORMAT: Record<ImageKind, string> = {
  'docker-v2': ManifestTypes.ociManifest,
  'registry-v2': ManifestTypes.dockerList,
  'docker-list': ManifestTypes.ociIndex,
  'registry-list': ManifestTypes.dockerV2,
  'oci-manifest': ManifestTypes.ociIndex,
  'oci-index': ManifestTypes.registryList,
  'oci-artifact': ManifestTypes.dockerV2,
  schema1: ManifestTypes.registryV2,
};

/** Accept headers a client might send that do not name `kind`'s stored type */
const FOREIGN_ACCEPT: Record<ImageKind, string> = {
  'docker-v2': `${ManifestTypes.ociManifest}, ${ManifestTypes.ociIndex}`,
  'registry-v2': `${ManifestTypes.dockerV2}, ${ManifestTypes.ociManifest}`,
  'docker-list': `${ManifestTypes.dockerV2}, ${ManifestTypes.ociManifest}`,
  'registry-list': `${ManifestTypes.dockerList}`,
  'oci-manifest': `${ManifestTypes.dockerV2}, ${ManifestTypes.dockerSignedV1}`,
  'oci-index': `${ManifestTypes.dockerList}, ${ManifestTypes.dockerV2}`,
  'oci-artifact': ManifestTypes.dockerV2,
  schema1: `${ManifestTypes.dockerV2}, ${ManifestTypes.ociManifest}`,
};

for (const driver of DRIVERS) {
  describe(`manifests (${driver})`, () => {
    let registry: TestRegistry;
    let url: string;
    let counter = 0;
    /** a repository name no other test uses */
    const fresh = (what: string) => `m/${what}/r${++counter}`;
    const manifestURL = (name: string, reference: string) => `${url}/v2/${name}/manifests/${reference}`;
    const get = (name: string, reference: string, init: RequestInit = {}) => fetch(manifestURL(name, reference), init);
    const del = (name: string, reference: string) => fetch(manifestURL(name, reference), { method: 'DELETE' });
    const inCatalog = async (name: string) => {
      for (let last = ''; ; ) {
        const page = (await (await fetch(`${url}/v2/_catalog?n=1000&last=${encodeURIComponent(last)}`)).json()) as { repositories: string[] };
        if (page.repositories.includes(name)) return true;
        if (page.repositories.length < 1000) return false;
        last = page.repositories[page.repositories.length - 1];
      }
    };

    before(async () => {
      registry = await startBerth({}, { driver });
      url = registry.url;
    });
    after(() => registry.stop());

    /** GET answers the image exactly: stored type, digest headers, length, ETag, the pushed bytes */
    async function assertServed(res: Response, image: Image, mediaType = image.mediaType): Promise<void> {
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-type'), mediaType);
      assert.equal(res.headers.get('registry-content-digest'), image.digest);
      assert.equal(res.headers.get('docker-content-digest'), image.digest);
      assert.equal(res.headers.get('content-length'), String(image.body.length));
      assert.equal(res.headers.get('etag'), `"${image.digest}"`);
      const bytes = Buffer.from(await res.arrayBuffer());
      assert.ok(bytes.equals(image.body), 'the body is served byte for byte as pushed');
    }

    for (const kind of IMAGE_KINDS) {
      describe(kind, () => {
        /** a fresh repository and an image for it (schema1's body names the repository and tag) */
        // after a refused PUT: a repository with only blobs is not known yet (NAME_UNKNOWN);
        // one with the children of an index (manifests) is, and the manifest is not in it
        const nothingStored = isIndexKind(kind) ? 'MANIFEST_UNKNOWN' : 'NAME_UNKNOWN';
        const setup = (tag = 'v1') => {
          const name = fresh(kind);
          return { name, image: buildImage(kind, { name, tag }) };
        };

        it('PUT by tag: 201, Location by digest, Content-Length 0, Registry- and Docker-Content-Digest', async () => {
          const { name, image } = setup();
          const res = await pushImage(url, name, image, 'v1');
          assert.equal(res.status, 201, await res.clone().text());
          assert.equal(res.headers.get('location'), `${url}/v2/${name}/manifests/${image.digest}`);
          assert.equal(res.headers.get('content-length'), '0');
          assert.equal(res.headers.get('registry-content-digest'), image.digest);
          assert.equal(res.headers.get('docker-content-digest'), image.digest);
          assert.equal(res.headers.get('oci-subject'), image.subject ? image.subject.digest : null);
          assert.equal(await res.text(), '');
          // the Location answers
          await assertServed(await fetch(res.headers.get('location')!), image);
        });

        it('GET by tag and by digest: stored type, digest, length, ETag and the pushed bytes', async () => {
          const { name, image } = setup();
          await pushImageOK(url, name, image, 'v1');
          await assertServed(await get(name, 'v1'), image);
          await assertServed(await get(name, image.digest), image);
        });

        it('HEAD by tag and by digest: the same headers, no body', async () => {
          const { name, image } = setup();
          await pushImageOK(url, name, image, 'v1');
          for (const reference of ['v1', image.digest]) {
            const res = await get(name, reference, { method: 'HEAD' });
            assert.equal(res.status, 200);
            assert.equal(res.headers.get('content-type'), image.mediaType);
            assert.equal(res.headers.get('registry-content-digest'), image.digest);
            assert.equal(res.headers.get('docker-content-digest'), image.digest);
            assert.equal(res.headers.get('content-length'), String(image.body.length));
            assert.equal(res.headers.get('etag'), `"${image.digest}"`);
            assert.equal((await res.arrayBuffer()).byteLength, 0);
          }
        });

        it('serves the stored manifest unchanged whatever the Accept header', async () => {
          const { name, image } = setup();
          await pushImageOK(url, name, image, 'v1');
          for (const accept of [undefined, '*/*', 'application/json', FOREIGN_ACCEPT[kind], `${image.mediaType}, */*;q=0.1`]) {
            const res = await get(name, 'v1', accept === undefined ? {} : { headers: { accept } });
            await assertServed(res, image);
          }
        });

        it('If-None-Match with the ETag answers 304 without a body; another ETag gets 200', async () => {
          const { name, image } = setup();
          await pushImageOK(url, name, image, 'v1');
          for (const reference of ['v1', image.digest]) {
            const res = await get(name, reference, { headers: { 'if-none-match': `"${image.digest}"` } });
            assert.equal(res.status, 304);
            assert.equal(res.headers.get('etag'), `"${image.digest}"`);
            assert.equal((await res.arrayBuffer()).byteLength, 0);
          }
          await assertServed(await get(name, 'v1', { headers: { 'if-none-match': `"${sha256('other')}"` } }), image);
        });

        it('PUT by digest: 201; a digest reference the body does not match: 400 DIGEST_INVALID and nothing stored', async () => {
          const { name, image } = setup();
          const wrong = sha256(image.body.toString() + ' ');
          await pushContent(url, name, image);
          const bad = await putManifest(url, name, wrong, image.body, image.mediaType);
          const error = await expectError(bad, 400, 'DIGEST_INVALID');
          assert.equal(error.detail?.digest, wrong);
          await expectError(await get(name, image.digest), 404, nothingStored);
          await expectError(await get(name, wrong), 404, nothingStored);

          const res = await putManifest(url, name, image.digest, image.body, image.mediaType);
          assert.equal(res.status, 201, await res.clone().text());
          assert.equal(res.headers.get('location'), `${url}/v2/${name}/manifests/${image.digest}`);
          assert.equal(res.headers.get('registry-content-digest'), image.digest);
          await assertServed(await get(name, image.digest), image);
          // a PUT by digest creates no tag
          await expectError(await get(name, 'v1'), 404, 'MANIFEST_UNKNOWN');
        });

        it('without a format-naming Content-Type (none, application/json) the body decides', async () => {
          const { name, image } = setup();
          await pushContent(url, name, image);
          // a signed schema1 body has no mediaType: it is taken as signed first generation (spec spelling)
          const stored = kind === 'schema1' ? ManifestTypes.registrySignedV1 : image.mediaType;
          for (const [tag, contentType] of [['v1', undefined], ['v1', 'application/json'], ['v1', 'application/octet-stream']] as const) {
            const res = await putManifest(url, name, tag, image.body, contentType);
            assert.equal(res.status, 201, `${contentType}: ${await res.clone().text()}`);
            assert.equal(res.headers.get('registry-content-digest'), image.digest);
            await assertServed(await get(name, tag), image, stored);
          }
        });

        it('a Content-Type naming another format than the body: 400 MANIFEST_INVALID on mediaType', async () => {
          const { name, image } = setup();
          await pushContent(url, name, image);
          const error = await expectError(await putManifest(url, name, 'v1', image.body, OTHER_FORMAT[kind]), 400, 'MANIFEST_INVALID');
          if (kind === 'schema1') {
            // no mediaType in the body: the Content-Type's format is applied and its first check fails
            assert.equal(error.detail?.check, 'schemaVersion');
          } else {
            assert.equal(error.detail?.check, 'mediaType');
            assert.match(error.message, /mediaType/);
          }
          await expectError(await get(name, 'v1'), 404, nothingStored);
        });

        if (isIndexKind(kind)) {
          it('children not in the repository: 400, one MANIFEST_UNKNOWN per missing child with its digest', async () => {
            const { name, image } = setup();
            const none = await putManifest(url, name, 'v1', image.body, image.mediaType);
            assert.equal(none.status, 400);
            const errors = await errorsOf(none);
            assert.deepEqual(
              errors.map((e) => [e.code, e.detail?.digest]),
              image.children.map((c) => ['MANIFEST_UNKNOWN', c.digest]),
            );
            // with the first child pushed, only the second is reported
            await pushImageOK(url, name, image.children[0]);
            const one = await putManifest(url, name, 'v1', image.body, image.mediaType);
            const error = await expectError(one, 400, 'MANIFEST_UNKNOWN');
            assert.equal(error.detail?.digest, image.children[1].digest);
            await expectError(await get(name, 'v1'), 404, 'MANIFEST_UNKNOWN');
            // a child pushed to another repository does not count
            const other = fresh(kind);
            await pushImageOK(url, other, image.children[1]);
            await expectError(await putManifest(url, name, 'v1', image.body, image.mediaType), 400, 'MANIFEST_UNKNOWN');
            await pushImageOK(url, name, image.children[1]);
            assert.equal((await putManifest(url, name, 'v1', image.body, image.mediaType)).status, 201);
          });
        } else {
          it('blobs not linked in the repository: 400, one BLOB_UNKNOWN per missing blob with detail.digest', async () => {
            const { name, image } = setup();
            const none = await putManifest(url, name, 'v1', image.body, image.mediaType);
            assert.equal(none.status, 400);
            const errors = await errorsOf(none);
            assert.deepEqual(
              errors.map((e) => e.code),
              image.blobs.map(() => 'BLOB_UNKNOWN'),
            );
            assert.deepEqual(errors.map((e) => e.detail?.digest).sort(), image.blobs.map((b) => b.digest).sort());
            // with the first blob pushed, the others are still reported
            assert.equal((await pushBlob(url, name, image.blobs[0].data)).status, 201);
            const some = await putManifest(url, name, 'v1', image.body, image.mediaType);
            assert.equal(some.status, 400);
            assert.deepEqual(
              (await errorsOf(some)).map((e) => [e.code, e.detail?.digest]).sort(),
              image.blobs.slice(1).map((b) => ['BLOB_UNKNOWN', b.digest]).sort(),
            );
            await expectError(await get(name, 'v1'), 404, 'NAME_UNKNOWN');
            // a blob stored for another repository is not linked in this one
            const other = fresh(kind);
            for (const blob of image.blobs) assert.equal((await pushBlob(url, other, blob.data)).status, 201);
            assert.equal((await putManifest(url, name, 'v1', image.body, image.mediaType)).status, 400);
            assert.equal((await pushImage(url, name, image, 'v1')).status, 201);
          });
        }

        it('DELETE by digest: 202, then tag and digest answer 404 MANIFEST_UNKNOWN; again: 404', async () => {
          const { name, image } = setup();
          // another manifest keeps the repository known after the delete
          await pushImageOK(url, name, buildImage(kind, { name, tag: 'other' }), 'other');
          await pushImageOK(url, name, image, 'v1');
          const res = await del(name, image.digest);
          assert.equal(res.status, 202);
          assert.equal(res.headers.get('content-length'), '0');
          assert.equal(await res.text(), '');
          for (const reference of ['v1', image.digest]) {
            const error = await expectError(await get(name, reference), 404, 'MANIFEST_UNKNOWN');
            assert.deepEqual(error.detail, reference === 'v1' ? { tag: 'v1' } : { digest: image.digest });
            assert.equal((await get(name, reference, { method: 'HEAD' })).status, 404);
          }
          await expectError(await del(name, image.digest), 404, 'MANIFEST_UNKNOWN');
          // pushing it again brings it back
          assert.equal((await putManifest(url, name, 'v1', image.body, image.mediaType)).status, 201);
          await assertServed(await get(name, 'v1'), image);
        });

        it('re-tagging moves the tag; the old revision stays reachable by digest', async () => {
          const name = fresh(kind);
          const first = buildImage(kind, { name, tag: 'moving' });
          const second = buildImage(kind, { name, tag: 'moving' });
          assert.notEqual(first.digest, second.digest);
          await pushImageOK(url, name, first, 'moving');
          await assertServed(await get(name, 'moving'), first);
          await pushImageOK(url, name, second, 'moving');
          await assertServed(await get(name, 'moving'), second);
          await assertServed(await get(name, first.digest), first);
          // deleting the old revision leaves the moved tag alone
          assert.equal((await del(name, first.digest)).status, 202);
          await assertServed(await get(name, 'moving'), second);
        });
      });
    }

    describe('PUT validation', () => {
      const ociBody = (doc: Record<string, unknown>) => Buffer.from(JSON.stringify({ schemaVersion: 2, mediaType: ManifestTypes.ociManifest, ...doc }));

      it('malformed JSON: 400 MANIFEST_INVALID naming the json check', async () => {
        const name = fresh('json');
        for (const body of ['{"schemaVersion": 2,', 'not json', '[1, 2]', '"a string"', '']) {
          const error = await expectError(await putManifest(url, name, 'v1', Buffer.from(body), ManifestTypes.ociManifest), 400, 'MANIFEST_INVALID');
          assert.equal(error.detail?.check, 'json', body);
          assert.match(error.message, /JSON|json/);
        }
        const error = await expectError(await putManifest(url, name, 'v1', Buffer.from([0x7b, 0xff, 0xfe, 0x7d]), ManifestTypes.ociManifest), 400, 'MANIFEST_INVALID');
        assert.equal(error.detail?.check, 'json');
        assert.match(error.message, /UTF-8/);
      });

      it('schema failures: 400 MANIFEST_INVALID whose detail names the check and the field', async () => {
        const name = fresh('schema');
        const config = { mediaType: 'application/vnd.oci.image.config.v1+json', digest: sha256('c'), size: 2 };
        const cases: [Buffer, string, string | undefined][] = [
          [ociBody({ schemaVersion: 3, config, layers: [] }), 'schemaVersion', 'schemaVersion'],
          [ociBody({ layers: [] }), 'type', 'config'],
          [ociBody({ config: { ...config, size: -1 }, layers: [] }), 'size', 'config.size'],
          [ociBody({ config, layers: 'nope' }), 'type', 'layers'],
          [ociBody({ config, layers: [{ ...config, mediaType: 7 }] }), 'type', 'layers[0].mediaType'],
          [ociBody({ config, layers: [], manifests: [] }), 'ambiguous', 'manifests'],
          [ociBody({ config, layers: [], annotations: { a: 1 } }), 'annotations', 'annotations.a'],
          [Buffer.from(JSON.stringify({ schemaVersion: 2, mediaType: ManifestTypes.dockerList })), 'mediaType', undefined],
        ];
        for (const [body, check, field] of cases) {
          const res = await putManifest(url, name, 'v1', Buffer.from(body), ManifestTypes.ociManifest);
          const error = await expectError(res, 400, 'MANIFEST_INVALID');
          assert.equal(error.detail?.check, check, body.toString());
          if (field) {
            assert.equal(error.detail?.field, field, body.toString());
            assert.ok(error.message.includes(field), error.message);
          }
        }
      });

      it('an unsupported Content-Type or body mediaType: 400 MANIFEST_INVALID listing the supported types', async () => {
        const name = fresh('type');
        const image = buildImage('oci-manifest');
        for (const [contentType, body] of [
          ['application/vnd.example.thing+json', image.body],
          [undefined, Buffer.from(image.body.toString().replace(ManifestTypes.ociManifest, 'application/vnd.example.thing+json'))],
          [undefined, Buffer.from('{"schemaVersion": 2}')],
        ] as const) {
          const error = await expectError(await putManifest(url, name, 'v1', Buffer.from(body), contentType), 400, 'MANIFEST_INVALID');
          assert.equal(error.detail?.check, 'mediaType');
          assert.ok(Array.isArray(error.detail?.supported), JSON.stringify(error.detail));
        }
      });

      it('a malformed digest inside a manifest: 400 DIGEST_INVALID', async () => {
        const name = fresh('innerdigest');
        const body = ociBody({ config: { mediaType: 'application/vnd.oci.image.config.v1+json', digest: 'sha256:xyz', size: 2 }, layers: [] });
        const error = await expectError(await putManifest(url, name, 'v1', body, ManifestTypes.ociManifest), 400, 'DIGEST_INVALID');
        assert.equal(error.detail?.field, 'config.digest');
      });

      it('a blob is not a manifest and a manifest is not a blob', async () => {
        const name = fresh('kinds');
        const image = await pushImageOK(url, name, buildImage('oci-manifest'), 'v1');
        // an index whose child is a layer blob of the repository
        const layer = image.blobs[1];
        const index = Buffer.from(JSON.stringify({ schemaVersion: 2, mediaType: ManifestTypes.ociIndex, manifests: [{ mediaType: ManifestTypes.ociManifest, digest: layer.digest, size: layer.size }] }));
        const childError = await expectError(await putManifest(url, name, 'idx', index, ManifestTypes.ociIndex), 400, 'MANIFEST_UNKNOWN');
        assert.equal(childError.detail?.digest, layer.digest);
        // an image whose layer is a manifest of the repository
        const config = image.blobs[0];
        const body = ociBody({ config: { mediaType: config.mediaType, digest: config.digest, size: config.size }, layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip', digest: image.digest, size: image.body.length }] });
        const blobError = await expectError(await putManifest(url, name, 'img', body, ManifestTypes.ociManifest), 400, 'BLOB_UNKNOWN');
        assert.equal(blobError.detail?.digest, image.digest);
      });

      it('a body of exactly 4 MiB is accepted; one byte more is 400 MANIFEST_INVALID (size)', async () => {
        const name = fresh('size');
        const image = buildImage('oci-manifest');
        await pushContent(url, name, image);
        // trailing whitespace keeps the JSON valid
        const exact = Buffer.concat([image.body, Buffer.alloc(LIMIT - image.body.length, ' ')]);
        const ok = await putManifest(url, name, 'exact', exact, image.mediaType);
        assert.equal(ok.status, 201, await ok.clone().text());
        assert.equal(ok.headers.get('registry-content-digest'), sha256(exact));
        const served = await get(name, 'exact');
        assert.equal(served.headers.get('content-length'), String(LIMIT));
        assert.ok(Buffer.from(await served.arrayBuffer()).equals(exact));

        const over = Buffer.concat([exact, Buffer.from(' ')]);
        const error = await expectError(await putManifest(url, name, 'over', over, image.mediaType), 400, 'MANIFEST_INVALID');
        assert.equal(error.detail?.check, 'size');
        assert.equal(error.detail?.limit, LIMIT);
        assert.match(error.message, /too large/);
        await expectError(await get(name, 'over'), 404, 'MANIFEST_UNKNOWN');
      });

      it('an endless chunked body is refused with 400 MANIFEST_INVALID after the limit, without reading it all', async () => {
        const name = fresh('stream');
        const { hostname, port } = new URL(url);
        const chunk = Buffer.alloc(256 * 1024, ' ');
        chunk[0] = '{'.charCodeAt(0);
        const result = await new Promise<{ status: number; body: string; connection?: string; written: number }>((resolve, reject) => {
          let written = 0;
          let done = false;
          let answer: { status: number; body: string; connection?: string } | undefined;
          const req = request({ host: hostname, port, method: 'PUT', path: `/v2/${name}/manifests/v1`, headers: { 'content-type': ManifestTypes.ociManifest, 'transfer-encoding': 'chunked' } }, (res) => {
            done = true;
            const parts: Buffer[] = [];
            res.on('data', (c: Buffer) => parts.push(c));
            res.on('end', () => (answer = { status: res.statusCode ?? 0, body: Buffer.concat(parts).toString(), connection: res.headers.connection }));
          });
          // the server must close the connection itself after answering (the rest of the body is unread)
          const timer = setTimeout(() => {
            req.destroy();
            reject(new Error(`the server kept the connection open after answering ${JSON.stringify(answer)}`));
          }, 10_000);
          req.on('close', () => {
            clearTimeout(timer);
            if (answer) resolve({ ...answer, written });
            else reject(new Error('the connection closed without an answer'));
          });
          req.on('error', (err) => (done ? undefined : reject(err)));
          const pump = () => {
            // up to 256 MiB, far beyond what a server buffering the whole body would give up on
            while (!done && written < 256 * 1024 * 1024) {
              written += chunk.length;
              if (!req.write(chunk)) return void req.once('drain', pump);
            }
            if (!done) req.end();
          };
          pump();
        });
        assert.equal(result.status, 400, result.body);
        const body = JSON.parse(result.body) as { errors: ErrorBody[] };
        assert.equal(body.errors[0].code, 'MANIFEST_INVALID');
        assert.equal(body.errors[0].detail?.check, 'size');
        assert.equal(result.connection, 'close');
        // socket buffers hold some megabytes; a server reading on would have taken all 256 MiB
        assert.ok(result.written < 64 * 1024 * 1024, `the client wrote ${result.written} bytes before the answer`);
        // the server is fine afterwards
        assert.equal((await fetch(`${url}/v2/`)).status, 200);
      });

      it('a declared Content-Length over the limit is refused before the body is read', async () => {
        const name = fresh('declared');
        const res = await putManifest(url, name, 'v1', Buffer.alloc(LIMIT + 1, ' '), ManifestTypes.ociManifest);
        assert.equal(res.headers.get('connection'), 'close');
        const error = await expectError(res, 400, 'MANIFEST_INVALID');
        assert.equal(error.detail?.check, 'size');
      });
    });

    describe('references and names', () => {
      let name: string;
      let image: Image;
      before(async () => {
        name = fresh('refs');
        image = await pushImageOK(url, name, buildImage('oci-manifest'), 'latest');
      });

      it('an invalid tag: 400 TAG_INVALID on GET, HEAD, PUT and DELETE', async () => {
        for (const tag of ['-leading-dash', '.dot', 'a'.repeat(129), 'sp%20ace', 'a+b', 'ümlaut']) {
          const encoded = encodeURI(tag);
          const errorGet = await expectError(await get(name, encoded), 400, 'TAG_INVALID');
          assert.match(errorGet.message, /invalid tag/);
          assert.equal((await get(name, encoded, { method: 'HEAD' })).status, 400);
          await expectError(await putManifest(url, name, encoded, image.body, image.mediaType), 400, 'TAG_INVALID');
          await expectError(await del(name, encoded), 400, 'TAG_INVALID');
        }
        // the longest and the odd valid ones are tags
        for (const tag of ['a'.repeat(128), '_x', 'A.b-C_9']) {
          await expectError(await get(name, tag), 404, 'MANIFEST_UNKNOWN');
          assert.equal((await putManifest(url, name, tag, image.body, image.mediaType)).status, 201);
          await assertServed(await get(name, tag), image);
        }
      });

      it('a malformed digest reference: 400 DIGEST_INVALID (never 500) on GET, HEAD, PUT and DELETE', async () => {
        const hex = '0'.repeat(64);
        for (const reference of ['sha256:abc', `sha256:${'g'.repeat(64)}`, `sha256:${'A'.repeat(64)}`, `sha256:${hex}0`, 'sha256:', `:${hex}`, `md5:${'0'.repeat(32)}`, `sha512:${'0'.repeat(127)}`, `sha384:${'0'.repeat(64)}`, 'sha256:%00']) {
          const error = await expectError(await get(name, reference), 400, 'DIGEST_INVALID');
          assert.equal(error.detail?.digest !== undefined, true, reference);
          assert.equal((await get(name, reference, { method: 'HEAD' })).status, 400, reference);
          await expectError(await putManifest(url, name, reference, image.body, image.mediaType), 400, 'DIGEST_INVALID');
          await expectError(await del(name, reference), 400, 'DIGEST_INVALID');
        }
      });

      it('an invalid repository name: 400 NAME_INVALID', async () => {
        for (const bad of ['Upper', 'a//b', '-a', 'a_', 'a..b', `${'a'.repeat(256)}`]) {
          for (const method of ['GET', 'PUT', 'DELETE']) {
            const res = await rawRequest(url, method, `/v2/${bad}/manifests/latest`);
            assert.equal(res.status, 400, `${method} ${bad}`);
            assert.equal((JSON.parse(res.body) as { errors: ErrorBody[] }).errors[0].code, 'NAME_INVALID');
          }
        }
      });

      it('an unknown repository: 404 NAME_UNKNOWN by tag and by digest, GET, HEAD and DELETE', async () => {
        const unknown = fresh('never-pushed');
        await expectError(await get(unknown, 'latest'), 404, 'NAME_UNKNOWN');
        await expectError(await get(unknown, image.digest), 404, 'NAME_UNKNOWN');
        assert.equal((await get(unknown, 'latest', { method: 'HEAD' })).status, 404);
        await expectError(await del(unknown, image.digest), 404, 'NAME_UNKNOWN');
      });

      it('an unknown manifest in a known repository: 404 MANIFEST_UNKNOWN with the reference in detail', async () => {
        const byTag = await expectError(await get(name, 'nope'), 404, 'MANIFEST_UNKNOWN');
        assert.deepEqual(byTag.detail, { tag: 'nope' });
        const digest = sha256('nope');
        const byDigest = await expectError(await get(name, digest), 404, 'MANIFEST_UNKNOWN');
        assert.deepEqual(byDigest.detail, { digest });
        assert.equal((await get(name, digest, { method: 'HEAD' })).status, 404);
        await expectError(await del(name, digest), 404, 'MANIFEST_UNKNOWN');
        // a blob's digest is not a manifest
        await expectError(await get(name, image.blobs[0].digest), 404, 'MANIFEST_UNKNOWN');
      });

      it('a manifest is scoped to its repository', async () => {
        const other = fresh('other');
        await pushImageOK(url, other, buildImage('oci-manifest'), 'latest');
        await expectError(await get(other, image.digest), 404, 'MANIFEST_UNKNOWN');
        await expectError(await del(other, image.digest), 404, 'MANIFEST_UNKNOWN');
        await assertServed(await get(name, image.digest), image);
      });
    });

    describe('sha512 digests', () => {
      for (const kind of ['oci-manifest', 'oci-index', 'docker-v2', 'oci-artifact'] as const) {
        it(`${kind}: PUT by its sha512 digest stores it under sha512; GET and HEAD by it; the sha256 of the body is unknown`, async () => {
          const name = fresh(`sha512-${kind}`);
          const image = buildImage(kind, { algorithm: 'sha512' });
          assert.match(image.digest, /^sha512:[0-9a-f]{128}$/);
          const res = await pushImage(url, name, image);
          assert.equal(res.status, 201, await res.clone().text());
          assert.equal(res.headers.get('location'), manifestURL(name, image.digest));
          assert.equal(res.headers.get('registry-content-digest'), image.digest);
          assert.equal(res.headers.get('docker-content-digest'), image.digest);
          await assertServed(await get(name, image.digest, { headers: { accept: image.mediaType } }), image);
          const head = await get(name, image.digest, { method: 'HEAD', headers: { accept: image.mediaType } });
          assert.equal(head.status, 200);
          assert.equal(head.headers.get('docker-content-digest'), image.digest);
          assert.equal(head.headers.get('content-length'), String(image.body.length));
          await expectError(await get(name, sha256(image.body)), 404, 'MANIFEST_UNKNOWN');
          // the blobs it references are served by their sha512 digests
          for (const blob of [...image.blobs, ...image.children.flatMap((c) => c.blobs)]) {
            const blobHead = await fetch(`${url}/v2/${name}/blobs/${blob.digest}`, { method: 'HEAD' });
            assert.equal(blobHead.status, 200, blob.digest);
            assert.equal(blobHead.headers.get('docker-content-digest'), blob.digest);
          }
        });
      }

      it('PUT by tag names the sha256 digest, even of content with sha512 blobs; the same body by its sha512 digest is a second revision', async () => {
        const name = fresh('sha512-tag');
        const image = buildImage('oci-manifest', { algorithm: 'sha512' });
        const byTag = await pushImage(url, name, image, 'v1');
        assert.equal(byTag.status, 201);
        assert.equal(byTag.headers.get('docker-content-digest'), sha256(image.body));
        assert.equal((await putManifest(url, name, image.digest, image.body, image.mediaType)).status, 201);
        const tagged = await get(name, 'v1', { method: 'HEAD', headers: { accept: image.mediaType } });
        assert.equal(tagged.headers.get('docker-content-digest'), sha256(image.body));
        assert.equal((await get(name, image.digest, { method: 'HEAD', headers: { accept: image.mediaType } })).status, 200);
      });

      it('PUT by a sha512 digest the body does not have: 400 DIGEST_INVALID; a missing sha512 blob: 400 BLOB_UNKNOWN naming it', async () => {
        const name = fresh('sha512-bad');
        const image = buildImage('oci-manifest', { algorithm: 'sha512' });
        const other = buildImage('oci-manifest', { algorithm: 'sha512' });
        await pushContent(url, name, image);
        await expectError(await putManifest(url, name, other.digest, image.body, image.mediaType), 400, 'DIGEST_INVALID');
        const missing = await putManifest(url, name, other.digest, other.body, other.mediaType);
        assert.equal(missing.status, 400);
        const errors = await errorsOf(missing);
        assert.deepEqual(errors.map((e) => e.code), other.blobs.map(() => 'BLOB_UNKNOWN'));
        assert.deepEqual(errors.map((e) => e.detail?.digest).sort(), other.blobs.map((b) => b.digest).sort());
      });

      it('DELETE by a sha512 digest: 202, then 404; the repository stays', async () => {
        const name = fresh('sha512-del');
        const image = await pushImageOK(url, name, buildImage('oci-manifest', { algorithm: 'sha512' }));
        assert.equal((await del(name, image.digest)).status, 202);
        await expectError(await get(name, image.digest), 404, 'MANIFEST_UNKNOWN');
        await expectError(await del(name, image.digest), 404, 'MANIFEST_UNKNOWN');
      });
    });

    describe('DELETE', () => {
      it('removes the revision and every tag that pointed at it; other tags stay', async () => {
        const name = fresh('del');
        const image = buildImage('docker-v2');
        const keep = buildImage('docker-v2');
        for (const tag of ['a', 'b', 'c']) await pushImageOK(url, name, image, tag);
        await pushImageOK(url, name, keep, 'keep');
        // a tag that once pointed at the image but moved away survives
        await pushImageOK(url, name, keep, 'c');
        assert.equal((await del(name, image.digest)).status, 202);
        for (const reference of ['a', 'b', image.digest]) await expectError(await get(name, reference), 404, 'MANIFEST_UNKNOWN');
        await assertServed(await get(name, 'c'), keep);
        await assertServed(await get(name, 'keep'), keep);
        // the blobs stay linked: the image can be pushed again without them
        assert.equal((await putManifest(url, name, 'a', image.body, image.mediaType)).status, 201);
      });

      it('deleting the last manifest of a repository: the repository stays, empty (MANIFEST_UNKNOWN, no tags, in the catalog)', async () => {
        const name = fresh('dellast');
        const image = await pushImageOK(url, name, buildImage('oci-manifest'), 'only');
        assert.equal((await del(name, image.digest)).status, 202);
        // the same on every driver (docs/decisions.md, "A repository outlives its last manifest")
        for (const reference of ['only', image.digest]) await expectError(await get(name, reference), 404, 'MANIFEST_UNKNOWN');
        await expectError(await del(name, image.digest), 404, 'MANIFEST_UNKNOWN');
        const tags = await fetch(`${url}/v2/${name}/tags/list`);
        assert.equal(tags.status, 200);
        assert.deepEqual(await tags.json(), { name, tags: [] });
        assert.ok(await inCatalog(name), `${name} in the catalog`);
        // and it takes a manifest again
        await pushImageOK(url, name, image, 'again');
      });

      it('by tag: 405 UNSUPPORTED saying manifests are deleted by digest; the manifest stays', async () => {
        const name = fresh('deltag');
        const image = await pushImageOK(url, name, buildImage('oci-manifest'), 'latest');
        const error = await expectError(await del(name, 'latest'), 405, 'UNSUPPORTED');
        assert.match(error.message, /deleted by digest/);
        await assertServed(await get(name, 'latest'), image);
        // also for an unknown tag
        await expectError(await del(name, 'nope'), 405, 'UNSUPPORTED');
      });

      it('deletes disabled (storage.delete.enabled false): 405 UNSUPPORTED, reads and pushes still work', async () => {
        const name = fresh('nodelete');
        const image = await pushImageOK(url, name, buildImage('oci-manifest'), 'latest');
        const sibling = await startSibling(registry, driver, { storage: { delete: { enabled: false } } });
        try {
          const res = await fetch(`${sibling.url}/v2/${name}/manifests/${image.digest}`, { method: 'DELETE' });
          const error = await expectError(res, 405, 'UNSUPPORTED');
          assert.match(error.message, /delete/);
          await expectError(await fetch(`${sibling.url}/v2/${name}/manifests/latest`, { method: 'DELETE' }), 405, 'UNSUPPORTED');
          await assertServed(await fetch(`${sibling.url}/v2/${name}/manifests/${image.digest}`), image);
          const next = buildImage('oci-manifest');
          assert.equal((await pushImage(sibling.url, name, next, 'next')).status, 201);
        } finally {
          await sibling.stop();
        }
        await assertServed(await get(name, 'latest'), image);
      });
    });

    it('read-only mode: PUT and DELETE 405 UNSUPPORTED, GET and HEAD work', async () => {
      const name = fresh('readonly');
      const image = await pushImageOK(url, name, buildImage('docker-v2'), 'latest');
      const other = buildImage('docker-v2');
      await pushContent(url, name, other);
      const sibling = await startSibling(registry, driver, { storage: { maintenance: { readonly: { enabled: true } } } });
      try {
        const put = await putManifest(sibling.url, name, 'latest', other.body, other.mediaType);
        assert.match((await expectError(put, 405, 'UNSUPPORTED')).message, /read-only/);
        await expectError(await putManifest(sibling.url, name, other.digest, other.body, other.mediaType), 405, 'UNSUPPORTED');
        await expectError(await fetch(`${sibling.url}/v2/${name}/manifests/${image.digest}`, { method: 'DELETE' }), 405, 'UNSUPPORTED');
        await assertServed(await fetch(`${sibling.url}/v2/${name}/manifests/latest`), image);
        const head = await fetch(`${sibling.url}/v2/${name}/manifests/${image.digest}`, { method: 'HEAD' });
        assert.equal(head.status, 200);
        assert.equal(head.headers.get('registry-content-digest'), image.digest);
      } finally {
        await sibling.stop();
      }
      await assertServed(await get(name, 'latest'), image);
      await expectError(await get(name, other.digest), 404, 'MANIFEST_UNKNOWN');
    });

    describe('foreign layers and validation.manifests.urls', () => {
      const MCR = 'https://mcr.microsoft.com/v2/windows/servercore/blobs/sha256:1234';
      const withPolicy = async (urls: Overrides | undefined, fn: (base: string) => Promise<void>) => {
        const sibling = await startSibling(registry, driver, urls === undefined ? { validation: { disabled: true } } : { validation: { manifests: { urls } } });
        try {
          await fn(sibling.url);
        } finally {
          await sibling.stop();
        }
      };

      it('no allow list (the default): a layer URL is refused with 400 MANIFEST_INVALID (urls)', async () => {
        const name = fresh('foreign');
        const image = buildImage('docker-v2', { foreignLayerURLs: [MCR] });
        const error = await expectError(await pushImage(url, name, image, 'v1'), 400, 'MANIFEST_INVALID');
        assert.equal(error.detail?.check, 'urls');
        assert.equal(error.detail?.url, MCR);
      });

      it('allowed URLs pass and the foreign layer need not be in the repository', async () => {
        await withPolicy({ allow: ['^https://mcr\\.microsoft\\.com/'] }, async (base) => {
          const name = fresh('foreign');
          const image = buildImage('docker-v2', { foreignLayerURLs: [MCR] });
          const res = await pushImage(base, name, image, 'v1');
          assert.equal(res.status, 201, await res.clone().text());
          assert.ok(Buffer.from(await (await fetch(`${base}/v2/${name}/manifests/v1`)).arrayBuffer()).equals(image.body));
          // one URL outside the allow list refuses the manifest
          const mixed = buildImage('docker-v2', { foreignLayerURLs: [MCR, 'https://evil.example/layer'] });
          const error = await expectError(await pushImage(base, name, mixed, 'v2'), 400, 'MANIFEST_INVALID');
          assert.equal(error.detail?.url, 'https://evil.example/layer');
          assert.match(error.message, /allow/);
          // only http(s) URLs, without fragments
          for (const bad of ['ftp://mcr.microsoft.com/x', `${MCR}#frag`]) {
            const refused = buildImage('docker-v2', { foreignLayerURLs: [bad] });
            assert.equal((await expectError(await pushImage(base, name, refused, 'v3'), 400, 'MANIFEST_INVALID')).detail?.url, bad);
          }
        });
      });

      it('deny patterns win over allow', async () => {
        await withPolicy({ allow: ['^https://'], deny: ['servercore'] }, async (base) => {
          const name = fresh('foreign');
          const denied = buildImage('docker-v2', { foreignLayerURLs: [MCR] });
          const error = await expectError(await pushImage(base, name, denied, 'v1'), 400, 'MANIFEST_INVALID');
          assert.match(error.message, /deny/);
          const fine = buildImage('docker-v2', { foreignLayerURLs: ['https://mcr.microsoft.com/v2/windows/nanoserver/blobs/sha256:1'] });
          assert.equal((await pushImage(base, name, fine, 'v2')).status, 201);
        });
      });

      it('with validation disabled any layer URL is accepted', async () => {
        await withPolicy(undefined, async (base) => {
          const name = fresh('foreign');
          const image = buildImage('docker-v2', { foreignLayerURLs: ['https://anywhere.example/layer.tar.gz'] });
          assert.equal((await pushImage(base, name, image, 'v1')).status, 201);
        });
      });
    });

    describe('signed schema1', () => {
      it('the digest is the sha256 of the payload, not of the signed body; served byte for byte by tag and digest', async () => {
        const name = fresh('schema1');
        const image = buildImage('schema1', { name, tag: 'v1' });
        assert.ok(image.payload);
        assert.equal(image.digest, sha256(image.payload));
        assert.notEqual(image.digest, sha256(image.body));
        const res = await pushImage(url, name, image, 'v1');
        assert.equal(res.status, 201);
        assert.equal(res.headers.get('registry-content-digest'), sha256(image.payload));
        await assertServed(await get(name, 'v1'), image);
        await assertServed(await get(name, image.digest), image);
        // the body's own hash names nothing
        await expectError(await get(name, sha256(image.body)), 404, 'MANIFEST_UNKNOWN');
      });

      it('the name in the body must be the repository: 400 NAME_INVALID', async () => {
        const name = fresh('schema1');
        const image = buildImage('schema1', { name: 'library/elsewhere', tag: 'v1' });
        await pushContent(url, name, image);
        for (const reference of ['v1', image.digest]) {
          const error = await expectError(await putManifest(url, name, reference, image.body, image.mediaType), 400, 'NAME_INVALID');
          assert.match(error.message, /library\/elsewhere/);
        }
      });

      it('the tag in the body must be the tag in the URL: 400 TAG_INVALID', async () => {
        const name = fresh('schema1');
        const image = buildImage('schema1', { name, tag: 'v1' });
        await pushContent(url, name, image);
        const error = await expectError(await putManifest(url, name, 'v2', image.body, image.mediaType), 400, 'TAG_INVALID');
        assert.match(error.message, /v1/);
        await expectError(await get(name, 'v2'), 404, 'NAME_UNKNOWN');
      });

      it('a signature that does not hold: 400 MANIFEST_UNVERIFIED, nothing stored', async () => {
        const name = fresh('schema1');
        const image = buildImage('schema1', { name, tag: 'v1' });
        await pushContent(url, name, image);
        // change the payload after signing: same length, so only the signature can tell
        const tampered = Buffer.from(image.body.toString().replace('"architecture": "amd64"', '"architecture": "arm64"'));
        assert.ok(!tampered.equals(image.body));
        await expectError(await putManifest(url, name, 'v1', tampered, image.mediaType), 400, 'MANIFEST_UNVERIFIED');
        // no signatures at all
        const unsigned = Buffer.from(image.payload!);
        await expectError(await putManifest(url, name, 'v1', unsigned, image.mediaType), 400, 'MANIFEST_UNVERIFIED');
        await expectError(await get(name, 'v1'), 404, 'NAME_UNKNOWN');
        await expectError(await get(name, image.digest), 404, 'NAME_UNKNOWN');
      });

      it('the docker and the registry spellings of the type are both accepted and served as pushed', async () => {
        const name = fresh('schema1');
        const image = buildImage('schema1', { name, tag: 'v1' });
        await pushContent(url, name, image);
        for (const type of [ManifestTypes.registrySignedV1, ManifestTypes.dockerSignedV1]) {
          assert.equal((await putManifest(url, name, 'v1', image.body, type)).status, 201);
          await assertServed(await get(name, 'v1'), image, type);
        }
      });
    });

    describe('twins', () => {
      it('a docker Content-Type with a registry-spelled body (and the reverse) is one format: stored as the Content-Type says', async () => {
        const name = fresh('twins');
        const image = buildImage('registry-v2');
        await pushContent(url, name, image);
        const res = await putManifest(url, name, 'v1', image.body, ManifestTypes.dockerV2);
        assert.equal(res.status, 201);
        await assertServed(await get(name, 'v1'), image, ManifestTypes.dockerV2);
        const list = buildImage('docker-list');
        await pushContent(url, name, list);
        assert.equal((await putManifest(url, name, 'l1', list.body, `${ManifestTypes.registryList}; charset=utf-8`)).status, 201);
        await assertServed(await get(name, 'l1'), list, ManifestTypes.registryList);
      });
    });
  });
}
