/**
 * The small deviations of issue 18, each as it was found and as it is answered now: upload ids
 * `.` and `..` (were 500), a Content-Type the web framework cannot parse (was its own 415), HEAD
 * on tags, catalog and referrers (was 405), and a chunked PATCH whose bytes do not match its
 * Content-Range (was taken as it came). Several ranges in one Range header: test/http/blobs.test.ts.
 */
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { pushBlob, randomBlob, rawRequest, sha256 } from '../helpers/blobs.js';
import { buildImage, ManifestTypes, pushImageOK, type Image } from '../helpers/images.js';

const REPO = 'dev/app';

/**
 * a PATCH whose body is sent with chunked transfer encoding (no Content-Length), in the given
 * pieces; `end: false` leaves the body open (the answer must come without the rest)
 */
function chunkedPatch(location: string, contentRange: string, pieces: Buffer[], end = true): Promise<{ status: number; headers: Record<string, string | string[] | undefined> }> {
  const url = new URL(location);
  return new Promise((resolve, reject) => {
    const req = request(url, { method: 'PATCH', headers: { 'content-type': 'application/octet-stream', 'content-range': contentRange } }, (res) => {
      res.resume();
      res.on('end', () => {
        resolve({ status: res.statusCode ?? 0, headers: res.headers });
        req.destroy();
      });
    });
    // the server may answer and close before every piece is sent
    req.on('error', (err) => ((err as NodeJS.ErrnoException).code === 'EPIPE' || (err as NodeJS.ErrnoException).code === 'ECONNRESET' ? undefined : reject(err)));
    for (const piece of pieces) req.write(piece);
    if (end) req.end();
  });
}

describe('small deviations (issue 18)', () => {
  let registry: TestRegistry;
  let image: Image;
  before(async () => {
    registry = await startBerth();
    image = buildImage('oci-manifest');
    await pushImageOK(registry.url, REPO, image, 'latest');
  });
  after(async () => {
    await registry?.stop();
  });

  it('upload ids "." and "..": 404 BLOB_UPLOAD_UNKNOWN on every method, nothing touched', async () => {
    for (const uuid of ['.', '..']) {
      for (const method of ['GET', 'PATCH', 'PUT', 'DELETE']) {
        // sent raw: a URL library would resolve the dot segments
        const res = await rawRequest(registry.url, method, `/v2/${REPO}/blobs/uploads/${uuid}?digest=${sha256('')}`);
        assert.equal(res.status, 404, `${method} ${uuid}`);
        const body = JSON.parse(res.body) as { errors: { code: string; detail: unknown }[] };
        assert.equal(body.errors[0].code, 'BLOB_UPLOAD_UNKNOWN');
        assert.deepEqual(body.errors[0].detail, { uuid });
      }
    }
    const tags = await fetch(`${registry.url}/v2/${REPO}/tags/list`);
    assert.deepEqual(await tags.json(), { name: REPO, tags: ['latest'] });
  });

  it('a path with a malformed percent escape gets the registry\'s answer, not the framework\'s', async () => {
    for (const [path, status, code] of [
      [`/v2/a%zz/tags/list`, 400, 'NAME_INVALID'],
      [`/v2/${REPO}%/manifests/latest`, 400, 'NAME_INVALID'],
      ['/v2/%', 404, 'NOT_FOUND'],
    ] as const) {
      const res = await rawRequest(registry.url, 'GET', path);
      assert.equal(res.status, status, path);
      assert.equal(JSON.parse(res.body).errors[0].code, code, path);
      assert.equal(res.headers['docker-distribution-api-version'], 'registry/2.0', path);
    }
  });

  it('an empty Content-Type is no Content-Type: a manifest is read from its body, a blob is stored', async () => {
    const other = buildImage('docker-v2');
    for (const blob of other.blobs) assert.equal((await pushBlob(registry.url, REPO, blob.data)).status, 201);
    for (const value of ['', '   ', ';;']) {
      const res = await fetch(`${registry.url}/v2/${REPO}/manifests/empty-type`, { method: 'PUT', body: other.body, headers: { 'content-type': value } });
      assert.equal(res.status, 201, await res.text());
      const got = await fetch(`${registry.url}/v2/${REPO}/manifests/empty-type`);
      assert.equal(got.headers.get('content-type'), ManifestTypes.dockerV2);
    }
    const blob = randomBlob(100);
    const res = await fetch(`${registry.url}/v2/${REPO}/blobs/uploads/?digest=${blob.digest}`, { method: 'POST', body: blob.data, headers: { 'content-type': '' } });
    assert.equal(res.status, 201, await res.text());
    assert.deepEqual(Buffer.from(await (await fetch(`${registry.url}/v2/${REPO}/blobs/${blob.digest}`)).arrayBuffer()), blob.data);
  });

  it('a Content-Type that is no media type gets the registry\'s answer: MANIFEST_INVALID naming it on a manifest', async () => {
    for (const [value, essence] of [['foo', 'foo'], ['no media type; a=b', 'no media type']]) {
      const res = await fetch(`${registry.url}/v2/${REPO}/manifests/odd-type`, { method: 'PUT', body: image.body, headers: { 'content-type': value } });
      assert.equal(res.status, 400);
      assert.equal(res.headers.get('content-type'), 'application/json; charset=utf-8');
      const { errors } = (await res.json()) as { errors: { code: string; message: string }[] };
      assert.equal(errors[0].code, 'MANIFEST_INVALID');
      assert.ok(errors[0].message.includes(`unsupported manifest media type ${JSON.stringify(essence)} (from the Content-Type)`), errors[0].message);
    }
  });

  it('HEAD on tags list, catalog and referrers answers as GET does, without a body', async () => {
    for (const path of [`/v2/${REPO}/tags/list?n=1`, '/v2/_catalog?n=1', `/v2/${REPO}/referrers/${image.digest}`]) {
      const get = await fetch(`${registry.url}${path}`);
      const getBody = Buffer.from(await get.arrayBuffer());
      const head = await rawRequest(registry.url, 'HEAD', path);
      assert.equal(head.status, 200, path);
      assert.equal(head.body, '', path);
      for (const name of ['content-type', 'content-length', 'link']) assert.equal(head.headers[name] ?? null, get.headers.get(name), `${path}: ${name}`);
      assert.equal(Number(head.headers['content-length']), getBody.length, path);
    }
    const unknown = await rawRequest(registry.url, 'HEAD', '/v2/no/such/tags/list');
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body, '');
  });

  describe('a chunked PATCH must carry the bytes its Content-Range declares', () => {
    const start = async () => {
      const res = await fetch(`${registry.url}/v2/${REPO}/blobs/uploads/`, { method: 'POST' });
      assert.equal(res.status, 202);
      return new URL(res.headers.get('location')!, registry.url).toString();
    };
    const complete = async (location: string, digest: string) => {
      const url = new URL(location);
      url.searchParams.set('digest', digest);
      return fetch(url, { method: 'PUT' });
    };

    it('fewer bytes: 416 with the Range that arrived; the client resumes from it and completes', async () => {
      const blob = randomBlob(3000);
      const location = await start();
      const short = await chunkedPatch(location, '0-1999', [blob.data.subarray(0, 700), blob.data.subarray(700, 1500)]);
      assert.equal(short.status, 416);
      assert.equal(short.headers.range, '0-1499');
      const rest = await chunkedPatch(short.headers.location as string, '1500-2999', [blob.data.subarray(1500)]);
      assert.equal(rest.status, 202);
      assert.equal(rest.headers.range, '0-2999');
      const done = await complete(rest.headers.location as string, blob.digest);
      assert.equal(done.status, 201, await done.text());
      assert.deepEqual(Buffer.from(await (await fetch(`${registry.url}/v2/${REPO}/blobs/${blob.digest}`)).arrayBuffer()), blob.data);
    });

    it('more bytes: 416 with the declared range kept and the rest refused; the connection is closed', async () => {
      const blob = randomBlob(3000);
      const location = await start();
      const long = await chunkedPatch(location, '0-999', [blob.data.subarray(0, 600), blob.data.subarray(600, 1800)], false);
      assert.equal(long.status, 416);
      assert.equal(long.headers.range, '0-999');
      assert.equal(long.headers.connection, 'close');
      const status = await fetch(long.headers.location as string);
      assert.equal(status.headers.get('range'), '0-999');
      const rest = await chunkedPatch(long.headers.location as string, '1000-2999', [blob.data.subarray(1000)]);
      assert.equal(rest.status, 202);
      const done = await complete(rest.headers.location as string, blob.digest);
      assert.equal(done.status, 201, await done.text());
    });

    it('exactly the declared bytes, in any pieces: 202', async () => {
      const blob = randomBlob(2000);
      const location = await start();
      const res = await chunkedPatch(location, '0-1999', [blob.data.subarray(0, 1), blob.data.subarray(1, 1000), blob.data.subarray(1000)]);
      assert.equal(res.status, 202);
      assert.equal(res.headers.range, '0-1999');
      assert.equal((await complete(res.headers.location as string, blob.digest)).status, 201);
    });
  });
});
