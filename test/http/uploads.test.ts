/** Every row of the upload state table (spec 3.1) and the statuses of 4.8–4.12, against the real server. */
import assert from 'node:assert/strict';
import { access, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { digestOf, errorCodes, randomBlob, sha256, sha512 } from '../helpers/blobs.js';

// the HTTP behaviour; S3 semantics are the driver suite's and the S3 files' (test/storage/s3.test.ts, test/http/s3-redirects.test.ts)
for (const driver of ['filesystem', 'inmemory'] as const) {
  describe(`uploads (${driver})`, () => {
    let registry: TestRegistry;
    let url: string;
    before(async () => {
      registry = await startBerth({}, { driver });
      url = registry.url;
    });
    after(() => registry.stop());

    const start = async (name = 'up/load') => {
      const res = await fetch(`${url}/v2/${name}/blobs/uploads/`, { method: 'POST' });
      assert.equal(res.status, 202);
      return res.headers.get('location')!;
    };
    const withDigest = (location: string, ...digests: string[]) => {
      const u = new URL(location);
      for (const d of digests) u.searchParams.append('digest', d);
      return u.toString();
    };
    const blobBytes = async (name: string, digest: string) => {
      const res = await fetch(`${url}/v2/${name}/blobs/${digest}`);
      assert.equal(res.status, 200);
      return Buffer.from(await res.arrayBuffer());
    };

    it('POST starts an upload: 202 with Location, Range 0-0, Content-Length 0 and the upload UUID', async () => {
      const res = await fetch(`${url}/v2/up/load/blobs/uploads/`, { method: 'POST' });
      assert.equal(res.status, 202);
      const location = res.headers.get('location')!;
      const uuid = res.headers.get('registry-upload-uuid')!;
      assert.match(uuid, /^[a-zA-Z0-9-_.=]+$/);
      assert.equal(res.headers.get('docker-upload-uuid'), uuid);
      assert.ok(location.startsWith(`${url}/v2/up/load/blobs/uploads/${uuid}?`), location);
      assert.equal(res.headers.get('range'), '0-0');
      assert.equal(res.headers.get('content-length'), '0');
      // identical to a GET of the returned location (4.8), but 204
      const status = await fetch(location);
      assert.equal(status.status, 204);
      assert.equal(status.headers.get('range'), '0-0');
      assert.equal(status.headers.get('registry-upload-uuid'), uuid);
    });

    it('POST without the trailing slash works too', async () => {
      const res = await fetch(`${url}/v2/up/load/blobs/uploads`, { method: 'POST' });
      assert.equal(res.status, 202);
    });

    it('POST ?digest= with the whole blob is a monolithic upload: 201, blob Location, digest header', async () => {
      const blob = randomBlob(5000);
      const res = await fetch(`${url}/v2/up/load/blobs/uploads/?digest=${blob.digest}`, {
        method: 'POST',
        body: blob.data,
        headers: { 'content-type': 'application/octet-stream' },
      });
      assert.equal(res.status, 201);
      assert.equal(res.headers.get('location'), `${url}/v2/up/load/blobs/${blob.digest}`);
      assert.equal(res.headers.get('registry-content-digest'), blob.digest);
      assert.match(res.headers.get('registry-upload-uuid') ?? '', /.+/);
      assert.equal(res.headers.get('content-length'), '0');
      assert.deepEqual(await blobBytes('up/load', blob.digest), blob.data);
    });

    it('POST ?digest= with content that does not match: 400 DIGEST_INVALID, nothing stored', async () => {
      const blob = randomBlob(100);
      const wrong = sha256('something else');
      const res = await fetch(`${url}/v2/up/load/blobs/uploads/?digest=${wrong}`, { method: 'POST', body: blob.data });
      assert.equal(res.status, 400);
      assert.deepEqual(await errorCodes(res), ['DIGEST_INVALID']);
      assert.equal((await fetch(`${url}/v2/up/load/blobs/${wrong}`)).status, 404);
      assert.equal((await fetch(`${url}/v2/up/load/blobs/${blob.digest}`)).status, 404);
    });

    it('POST ?digest= with a malformed digest: 400 DIGEST_INVALID before anything is stored', async () => {
      for (const digest of ['sha256:xyz', 'foo', 'sha256:' + 'a'.repeat(63)]) {
        const res = await fetch(`${url}/v2/up/load/blobs/uploads/?digest=${digest}`, { method: 'POST', body: 'abc' });
        assert.equal(res.status, 400, digest);
        assert.deepEqual(await errorCodes(res), ['DIGEST_INVALID']);
      }
    });

    it('POST ?mount=&from= of a blob in the source repository: 201 with the blob URL, then readable', async () => {
      const blob = randomBlob(300);
      await fetch(`${url}/v2/source/repo/blobs/uploads/?digest=${blob.digest}`, { method: 'POST', body: blob.data });
      const res = await fetch(`${url}/v2/target/blobs/uploads/?mount=${blob.digest}&from=source/repo`, { method: 'POST' });
      assert.equal(res.status, 201);
      assert.equal(res.headers.get('location'), `${url}/v2/target/blobs/${blob.digest}`);
      assert.equal(res.headers.get('registry-content-digest'), blob.digest);
      assert.equal(res.headers.get('content-length'), '0');
      assert.deepEqual(await blobBytes('target', blob.digest), blob.data);
    });

    it('POST ?mount= of a blob the source lacks, or with invalid arguments, falls back to a 202 upload', async () => {
      const blob = randomBlob(10);
      for (const query of [`mount=${blob.digest}&from=source/repo`, `mount=${blob.digest}&from=Bad..Name`, `mount=sha256:nothex&from=source/repo`, `mount=${blob.digest}`]) {
        const res = await fetch(`${url}/v2/target/blobs/uploads/?${query}`, { method: 'POST' });
        assert.equal(res.status, 202, query);
        assert.match(res.headers.get('location') ?? '', /\/v2\/target\/blobs\/uploads\//);
        assert.equal(res.headers.get('range'), '0-0');
      }
      assert.equal((await fetch(`${url}/v2/target/blobs/${blob.digest}`)).status, 404);
    });

    it('PATCH chunks in order with Content-Range: 202, Range grows, Location may change; PUT completes', async () => {
      const blob = randomBlob(3000);
      let location = await start();
      const chunks = [blob.data.subarray(0, 1000), blob.data.subarray(1000, 2500), blob.data.subarray(2500)];
      let offset = 0;
      for (const chunk of chunks) {
        const res = await fetch(location, {
          method: 'PATCH',
          body: chunk,
          headers: { 'content-type': 'application/octet-stream', 'content-range': `${offset}-${offset + chunk.length - 1}` },
        });
        assert.equal(res.status, 202);
        offset += chunk.length;
        assert.equal(res.headers.get('range'), `0-${offset - 1}`);
        assert.equal(res.headers.get('content-length'), '0');
        assert.match(res.headers.get('registry-upload-uuid') ?? '', /.+/);
        location = res.headers.get('location')!;
      }
      const status = await fetch(location);
      assert.equal(status.status, 204);
      assert.equal(status.headers.get('range'), '0-2999');
      assert.equal(status.headers.get('content-length'), '0');
      const done = await fetch(withDigest(location, blob.digest), { method: 'PUT' });
      assert.equal(done.status, 201);
      assert.equal(done.headers.get('location'), `${url}/v2/up/load/blobs/${blob.digest}`);
      assert.equal(done.headers.get('registry-content-digest'), blob.digest);
      assert.equal(done.headers.get('content-length'), '0');
      assert.deepEqual(await blobBytes('up/load', blob.digest), blob.data);
    });

    it('PATCH accepts the "bytes a-b/total" spelling of Content-Range', async () => {
      const location = await start();
      const res = await fetch(location, { method: 'PATCH', body: 'abcd', headers: { 'content-range': 'bytes 0-3/4' } });
      assert.equal(res.status, 202);
      assert.equal(res.headers.get('range'), '0-3');
    });

    it('PATCH out of order: 416 with Range and Location, and the upload stays usable', async () => {
      const blob = randomBlob(200);
      let location = await start();
      let res = await fetch(location, { method: 'PATCH', body: blob.data.subarray(0, 100), headers: { 'content-range': '0-99' } });
      location = res.headers.get('location')!;
      for (const range of ['50-149', '101-200', '0-99']) {
        res = await fetch(location, { method: 'PATCH', body: blob.data.subarray(100, 200), headers: { 'content-range': range } });
        assert.equal(res.status, 416, range);
        assert.equal(res.headers.get('range'), '0-99');
        assert.match(res.headers.get('location') ?? '', /\/v2\/up\/load\/blobs\/uploads\//);
        assert.match(res.headers.get('registry-upload-uuid') ?? '', /.+/);
        assert.equal(res.headers.get('content-length'), '0');
      }
      res = await fetch(res.headers.get('location')!, { method: 'PATCH', body: blob.data.subarray(100), headers: { 'content-range': '100-199' } });
      assert.equal(res.status, 202);
      const done = await fetch(withDigest(res.headers.get('location')!, blob.digest), { method: 'PUT' });
      assert.equal(done.status, 201);
      assert.deepEqual(await blobBytes('up/load', blob.digest), blob.data);
    });

    it('PATCH with a malformed Content-Range: 416 and nothing written', async () => {
      const location = await start();
      for (const range of ['abc', '5-2', 'bytes=x-y', '-5']) {
        const res = await fetch(location, { method: 'PATCH', body: 'hello', headers: { 'content-range': range } });
        assert.equal(res.status, 416, range);
        assert.equal(res.headers.get('range'), '0-0');
      }
      assert.equal((await fetch(location)).headers.get('range'), '0-0');
    });

    it('PATCH whose Content-Length disagrees with its Content-Range: 400 SIZE_INVALID, nothing written', async () => {
      const location = await start();
      const res = await fetch(location, { method: 'PATCH', body: 'hello', headers: { 'content-range': '0-9' } });
      assert.equal(res.status, 400);
      assert.deepEqual(await errorCodes(res), ['SIZE_INVALID']);
      assert.equal((await fetch(location)).headers.get('range'), '0-0');
    });

    it('PATCH without Content-Range streams (chunked transfer encoding)', async () => {
      const blob = randomBlob(256 * 1024);
      const location = await start();
      const body = new ReadableStream({
        start(controller) {
          for (let i = 0; i < blob.data.length; i += 10_000) controller.enqueue(blob.data.subarray(i, i + 10_000));
          controller.close();
        },
      });
      const res = await fetch(location, { method: 'PATCH', body, duplex: 'half' } as RequestInit);
      assert.equal(res.status, 202);
      assert.equal(res.headers.get('range'), `0-${blob.data.length - 1}`);
      const done = await fetch(withDigest(res.headers.get('location')!, blob.digest), { method: 'PUT' });
      assert.equal(done.status, 201);
      assert.deepEqual(await blobBytes('up/load', blob.digest), blob.data);
    });

    it('PUT with the last chunk (with and without Content-Range) completes the upload', async () => {
      for (const withRange of [false, true]) {
        const blob = randomBlob(1500);
        const location = await start();
        const first = await fetch(location, { method: 'PATCH', body: blob.data.subarray(0, 1000) });
        const headers: Record<string, string> = withRange ? { 'content-range': '1000-1499' } : {};
        const done = await fetch(withDigest(first.headers.get('location')!, blob.digest), { method: 'PUT', body: blob.data.subarray(1000), headers });
        assert.equal(done.status, 201, `with range: ${withRange}`);
        assert.equal(done.headers.get('registry-content-digest'), blob.digest);
        assert.deepEqual(await blobBytes('up/load', blob.digest), blob.data);
      }
    });

    it('PUT with the whole blob after POST (monolithic in two requests)', async () => {
      const blob = randomBlob(4096);
      const location = await start();
      const done = await fetch(withDigest(location, blob.digest), { method: 'PUT', body: blob.data, headers: { 'content-type': 'application/octet-stream' } });
      assert.equal(done.status, 201);
      assert.deepEqual(await blobBytes('up/load', blob.digest), blob.data);
    });

    it('PUT of an empty upload stores the empty blob', async () => {
      const empty = sha256('');
      const done = await fetch(withDigest(await start(), empty), { method: 'PUT' });
      assert.equal(done.status, 201);
      assert.equal((await blobBytes('up/load', empty)).length, 0);
    });

    it('PUT with a Content-Range that does not continue the upload: 416', async () => {
      const blob = randomBlob(100);
      const location = await start();
      const res = await fetch(withDigest(location, blob.digest), { method: 'PUT', body: blob.data, headers: { 'content-range': '10-109' } });
      assert.equal(res.status, 416);
      assert.equal(res.headers.get('range'), '0-0');
    });

    it('PUT with several digest parameters verifies every one', async () => {
      const blob = randomBlob(700);
      const ok = await fetch(withDigest(await start(), blob.digest, sha512(blob.data)), { method: 'PUT', body: blob.data });
      assert.equal(ok.status, 201);
      assert.equal(ok.headers.get('registry-content-digest'), blob.digest);
      const other = randomBlob(700);
      const bad = await fetch(withDigest(await start(), other.digest, sha512(blob.data)), { method: 'PUT', body: other.data });
      assert.equal(bad.status, 400);
      assert.deepEqual(await errorCodes(bad), ['DIGEST_INVALID']);
      assert.equal((await fetch(`${url}/v2/up/load/blobs/${other.digest}`)).status, 404);
    });

    it('PUT with a digest that does not match: 400 DIGEST_INVALID, the upload is failed (404 after), no blob', async () => {
      const blob = randomBlob(100);
      const location = await start();
      const wrong = sha256('nope');
      const res = await fetch(withDigest(location, wrong), { method: 'PUT', body: blob.data });
      assert.equal(res.status, 400);
      const body = (await res.json()) as { errors: { code: string; detail: { digest: string } }[] };
      assert.equal(body.errors[0].code, 'DIGEST_INVALID');
      assert.equal(body.errors[0].detail.digest, wrong);
      const after = await fetch(location);
      assert.equal(after.status, 404);
      assert.deepEqual(await errorCodes(after), ['BLOB_UPLOAD_UNKNOWN']);
      assert.equal((await fetch(`${url}/v2/up/load/blobs/${wrong}`)).status, 404);
    });

    it('PUT without digest: 400 DIGEST_INVALID and the upload stays open', async () => {
      const blob = randomBlob(100);
      const location = await start();
      const patched = await fetch(location, { method: 'PATCH', body: blob.data });
      const next = patched.headers.get('location')!;
      const res = await fetch(next, { method: 'PUT' });
      assert.equal(res.status, 400);
      assert.deepEqual(await errorCodes(res), ['DIGEST_INVALID']);
      const status = await fetch(next);
      assert.equal(status.status, 204);
      assert.equal(status.headers.get('range'), '0-99');
      assert.equal((await fetch(withDigest(next, blob.digest), { method: 'PUT' })).status, 201);
    });

    it('PUT with a malformed digest: 400 DIGEST_INVALID and the upload stays open', async () => {
      const location = await start();
      const res = await fetch(withDigest(location, 'sha256:zz'), { method: 'PUT' });
      assert.equal(res.status, 400);
      assert.deepEqual(await errorCodes(res), ['DIGEST_INVALID']);
      assert.equal((await fetch(location)).status, 204);
    });

    it('DELETE cancels: 204, then the uuid answers 404 BLOB_UPLOAD_UNKNOWN to every method', async () => {
      const location = await start();
      await fetch(location, { method: 'PATCH', body: 'some data' });
      const res = await fetch(location, { method: 'DELETE' });
      assert.equal(res.status, 204);
      const uuid = new URL(location).pathname.split('/').pop();
      assert.equal(res.headers.get('registry-upload-uuid'), uuid);
      assert.equal(res.headers.get('docker-upload-uuid'), uuid);
      for (const method of ['GET', 'PATCH', 'PUT', 'DELETE']) {
        const target = method === 'PUT' ? withDigest(location, sha256('some data')) : location;
        const after = await fetch(target, { method, body: method === 'PATCH' ? 'x' : undefined });
        assert.equal(after.status, 404, method);
        assert.deepEqual(await errorCodes(after), ['BLOB_UPLOAD_UNKNOWN'], method);
      }
    });

    it('an unknown upload id answers 404 BLOB_UPLOAD_UNKNOWN', async () => {
      const location = new URL(await start());
      location.pathname = location.pathname.replace(/[^/]+$/, 'f00dfeed-0000-4000-8000-000000000000');
      for (const method of ['GET', 'PATCH', 'DELETE']) {
        const res = await fetch(location, { method });
        assert.equal(res.status, 404, method);
        assert.deepEqual(await errorCodes(res), ['BLOB_UPLOAD_UNKNOWN']);
      }
    });

    it('an upload URL with a missing, altered or foreign _state: 400 BLOB_UPLOAD_INVALID, nothing written', async () => {
      const location = new URL(await start());
      const other = new URL(await start());
      const variants: URL[] = [];
      const missing = new URL(location);
      missing.searchParams.delete('_state');
      variants.push(missing);
      const altered = new URL(location);
      altered.searchParams.set('_state', location.searchParams.get('_state')!.replace(/^./, (c) => (c === 'e' ? 'f' : 'e')));
      variants.push(altered);
      const foreign = new URL(location);
      foreign.searchParams.set('_state', other.searchParams.get('_state')!);
      variants.push(foreign);
      for (const variant of variants) {
        const res = await fetch(variant, { method: 'PATCH', body: 'data' });
        assert.equal(res.status, 400, variant.toString());
        assert.deepEqual(await errorCodes(res), ['BLOB_UPLOAD_INVALID']);
      }
      assert.equal((await fetch(location)).headers.get('range'), '0-0');
    });

    it('two clients uploading the same blob at the same time both get 201', async () => {
      const blob = randomBlob(512 * 1024);
      const [a, b] = await Promise.all([start('same'), start('same')]);
      const results = await Promise.all([a, b].map((loc) => fetch(withDigest(loc, blob.digest), { method: 'PUT', body: blob.data })));
      assert.deepEqual(results.map((r) => r.status), [201, 201]);
      assert.deepEqual(await blobBytes('same', blob.digest), blob.data);
    });

    describe('sha512 (OCI distribution-spec: digest-algorithm on the POST)', () => {
      const startWith = async (algorithm: string, name = 'up/sha512') => {
        const res = await fetch(`${url}/v2/${name}/blobs/uploads/?digest-algorithm=${algorithm}`, { method: 'POST' });
        assert.equal(res.status, 202, await res.clone().text());
        return res.headers.get('location')!;
      };
      /** GET and HEAD by the digest serve the bytes with it in the digest headers; the sha256 of the same bytes is not stored */
      const servedBy = async (name: string, digest: string, data: Buffer) => {
        const answer = await fetch(`${url}/v2/${name}/blobs/${digest}`, { redirect: 'manual' });
        assert.equal(answer.status, 200);
        assert.equal(answer.headers.get('registry-content-digest'), digest);
        assert.equal(answer.headers.get('docker-content-digest'), digest);
        await answer.body?.cancel();
        assert.deepEqual(await blobBytes(name, digest), data);
        const head = await fetch(`${url}/v2/${name}/blobs/${digest}`, { method: 'HEAD' });
        assert.equal(head.status, 200);
        assert.equal(head.headers.get('content-length'), String(data.length));
        assert.equal(head.headers.get('docker-content-digest'), digest);
        assert.equal((await fetch(`${url}/v2/${name}/blobs/${sha256(data)}`, { method: 'HEAD' })).status, 404);
      };

      it('POST ?digest-algorithm=sha512, chunked PATCHes, PUT ?digest=sha512:…: 201 with the sha512 digest; GET/HEAD by it', async () => {
        const blob = randomBlob(3000);
        const digest = sha512(blob.data);
        let location = await startWith('sha512');
        for (const [start, end] of [[0, 999], [1000, 2199]]) {
          const res = await fetch(location, { method: 'PATCH', body: blob.data.subarray(start, end + 1), headers: { 'content-range': `${start}-${end}` } });
          assert.equal(res.status, 202);
          assert.equal(res.headers.get('range'), `0-${end}`);
          location = res.headers.get('location')!;
        }
        // the upload URL still says sha512 after the chunks: its status answers as any other
        assert.equal((await fetch(location)).headers.get('range'), '0-2199');
        const done = await fetch(withDigest(location, digest), { method: 'PUT', body: blob.data.subarray(2200), headers: { 'content-range': '2200-2999' } });
        assert.equal(done.status, 201, await done.clone().text());
        assert.equal(done.headers.get('location'), `${url}/v2/up/sha512/blobs/${digest}`);
        assert.equal(done.headers.get('registry-content-digest'), digest);
        assert.equal(done.headers.get('docker-content-digest'), digest);
        await servedBy('up/sha512', digest, blob.data);
      });

      it('a streamed PATCH then PUT by sha512 without digest-algorithm (as the OCI conformance suite pushes): 201, stored as sha512', async () => {
        const blob = randomBlob(5000);
        const digest = sha512(blob.data);
        const patched = await fetch(await start('up/sha512'), { method: 'PATCH', body: blob.data });
        assert.equal(patched.status, 202);
        const done = await fetch(withDigest(patched.headers.get('location')!, digest), { method: 'PUT' });
        assert.equal(done.status, 201, await done.clone().text());
        assert.equal(done.headers.get('registry-content-digest'), digest);
        await servedBy('up/sha512', digest, blob.data);
      });

      it('monolithic POST ?digest=sha512:… (with or without digest-algorithm): 201, blob Location, sha512 header', async () => {
        for (const query of ['', '&digest-algorithm=sha512']) {
          const blob = randomBlob(700);
          const digest = sha512(blob.data);
          const res = await fetch(`${url}/v2/up/sha512/blobs/uploads/?digest=${digest}${query}`, { method: 'POST', body: blob.data });
          assert.equal(res.status, 201, await res.clone().text());
          assert.equal(res.headers.get('location'), `${url}/v2/up/sha512/blobs/${digest}`);
          assert.equal(res.headers.get('registry-content-digest'), digest);
          await servedBy('up/sha512', digest, blob.data);
        }
      });

      it('sha384 too; and a sha512 upload completed by its sha256 digest is stored as sha256', async () => {
        const blob = randomBlob(900);
        const sha384 = digestOf('sha384', blob.data);
        const res = await fetch(withDigest(await startWith('sha384'), sha384), { method: 'PUT', body: blob.data });
        assert.equal(res.status, 201);
        assert.equal(res.headers.get('registry-content-digest'), sha384);
        assert.deepEqual(Buffer.from(await (await fetch(`${url}/v2/up/sha512/blobs/${sha384}`)).arrayBuffer()), blob.data);
        const other = randomBlob(900);
        const bySha256 = await fetch(withDigest(await startWith('sha512'), other.digest), { method: 'PUT', body: other.data });
        assert.equal(bySha256.status, 201);
        assert.equal(bySha256.headers.get('registry-content-digest'), other.digest);
        assert.equal((await fetch(`${url}/v2/up/sha512/blobs/${sha512(other.data)}`, { method: 'HEAD' })).status, 404);
      });

      it('a sha512 digest that does not match: 400 DIGEST_INVALID naming it, nothing stored', async () => {
        const blob = randomBlob(300);
        const wrong = sha512(Buffer.from('something else'));
        const res = await fetch(withDigest(await startWith('sha512'), wrong), { method: 'PUT', body: blob.data });
        assert.equal(res.status, 400);
        const body = (await res.json()) as { errors: { code: string; detail: { digest: string } }[] };
        assert.equal(body.errors[0].code, 'DIGEST_INVALID');
        assert.equal(body.errors[0].detail.digest, wrong);
        assert.equal((await fetch(`${url}/v2/up/sha512/blobs/${sha512(blob.data)}`, { method: 'HEAD' })).status, 404);
      });

      it('an unsupported algorithm: 400 DIGEST_INVALID whose message names the supported ones', async () => {
        const post = await fetch(`${url}/v2/up/sha512/blobs/uploads/?digest-algorithm=md5`, { method: 'POST' });
        assert.equal(post.status, 400);
        const body = (await post.json()) as { errors: { code: string; message: string }[] };
        assert.equal(body.errors[0].code, 'DIGEST_INVALID');
        assert.match(body.errors[0].message, /"md5".*sha256, sha384 or sha512/);
        for (const digest of [`md5:${'0'.repeat(32)}`, `blake3:${'0'.repeat(64)}`]) {
          const put = await fetch(withDigest(await start('up/sha512'), digest), { method: 'PUT', body: 'x' });
          assert.equal(put.status, 400, digest);
          const err = ((await put.json()) as { errors: { code: string; message: string }[] }).errors[0];
          assert.equal(err.code, 'DIGEST_INVALID');
          assert.match(err.message, /sha256, sha384 or sha512/);
        }
        // a sha512 of the wrong length is malformed, and says how long it should be
        const short = await fetch(`${url}/v2/up/sha512/blobs/sha512:${'0'.repeat(64)}`);
        assert.equal(short.status, 400);
        assert.match(((await short.json()) as { errors: { message: string }[] }).errors[0].message, /128 lowercase hex/);
      });

      it('mount and DELETE by a sha512 digest', async () => {
        const blob = randomBlob(400);
        const digest = sha512(blob.data);
        assert.equal((await fetch(`${url}/v2/up/sha512/blobs/uploads/?digest=${digest}`, { method: 'POST', body: blob.data })).status, 201);
        const mount = await fetch(`${url}/v2/up/mounted/blobs/uploads/?mount=${digest}&from=up/sha512`, { method: 'POST' });
        assert.equal(mount.status, 201);
        assert.equal(mount.headers.get('location'), `${url}/v2/up/mounted/blobs/${digest}`);
        assert.equal(mount.headers.get('registry-content-digest'), digest);
        await servedBy('up/mounted', digest, blob.data);
        const del = await fetch(`${url}/v2/up/mounted/blobs/${digest}`, { method: 'DELETE' });
        assert.equal(del.status, 202);
        assert.equal(del.headers.get('docker-content-digest'), digest);
        assert.equal((await fetch(`${url}/v2/up/mounted/blobs/${digest}`)).status, 404);
        assert.equal((await fetch(`${url}/v2/up/sha512/blobs/${digest}`)).status, 200);
      });
    });

    it('invalid names on upload routes: 400 NAME_INVALID', async () => {
      const res = await fetch(`${url}/v2/UP/blobs/uploads/`, { method: 'POST' });
      assert.equal(res.status, 400);
      assert.deepEqual(await errorCodes(res), ['NAME_INVALID']);
    });
  });
}

describe('uploads on disk', () => {
  let registry: TestRegistry;
  before(async () => {
    registry = await startBerth();
  });
  after(() => registry.stop());
  const v2 = () => join(registry.root!, 'docker/registry/v2');

  it('a blob lands in the Distribution layout, with the repository link, and the upload folder is gone', async () => {
    const blob = randomBlob(2048);
    const location = (await fetch(`${registry.url}/v2/disk/test/blobs/uploads/`, { method: 'POST' })).headers.get('location')!;
    const uuid = new URL(location).pathname.split('/').pop()!;
    await access(join(v2(), 'repositories/disk/test/_uploads', uuid, 'startedat'));
    const u = new URL(location);
    u.searchParams.set('digest', blob.digest);
    assert.equal((await fetch(u, { method: 'PUT', body: blob.data })).status, 201);
    const hex = blob.digest.slice(7);
    assert.deepEqual(await readFile(join(v2(), 'blobs/sha256', hex.slice(0, 2), hex, 'data')), blob.data);
    assert.equal(await readFile(join(v2(), 'repositories/disk/test/_layers/sha256', hex, 'link'), 'utf8'), blob.digest);
    assert.deepEqual(await readdir(join(v2(), 'repositories/disk/test/_uploads')), []);
  });

  it('two uploads of one blob store one copy', async () => {
    const blob = randomBlob(1024);
    for (const name of ['copy/a', 'copy/b']) {
      const res = await fetch(`${registry.url}/v2/${name}/blobs/uploads/?digest=${blob.digest}`, { method: 'POST', body: blob.data });
      assert.equal(res.status, 201);
    }
    const hex = blob.digest.slice(7);
    // the prefix directory may hold other tests' blobs: only blob directories, and this one holds its data alone
    const names = await readdir(join(v2(), 'blobs/sha256', hex.slice(0, 2)));
    assert.deepEqual(names.filter((n) => !/^[0-9a-f]{64}$/.test(n)), [], 'no stray files beside the blobs');
    assert.ok(names.includes(hex));
    assert.deepEqual(await readdir(join(v2(), 'blobs/sha256', hex.slice(0, 2), hex)), ['data']);
  });

  it('a cancelled upload leaves no data behind', async () => {
    const location = (await fetch(`${registry.url}/v2/cancel/me/blobs/uploads/`, { method: 'POST' })).headers.get('location')!;
    await fetch(location, { method: 'PATCH', body: 'partial' });
    assert.equal((await fetch(location, { method: 'DELETE' })).status, 204);
    assert.deepEqual(await readdir(join(v2(), 'repositories/cancel/me/_uploads')), []);
  });

  it('a sha512 blob is stored in Distribution\'s layout: blobs/sha512/<2 hex>/<hex>/data and _layers/sha512/<hex>/link', async () => {
    const blob = randomBlob(2048);
    const digest = sha512(blob.data);
    const res = await fetch(`${registry.url}/v2/disk/sha512/blobs/uploads/?digest=${digest}&digest-algorithm=sha512`, { method: 'POST', body: blob.data });
    assert.equal(res.status, 201);
    const hex = digest.slice('sha512:'.length);
    assert.deepEqual(await readFile(join(v2(), 'blobs/sha512', hex.slice(0, 2), hex, 'data')), blob.data);
    assert.equal(await readFile(join(v2(), 'repositories/disk/sha512/_layers/sha512', hex, 'link'), 'utf8'), digest);
    // one copy, under the algorithm it was pushed with
    await assert.rejects(access(join(v2(), 'repositories/disk/sha512/_layers/sha256')));
  });
});
