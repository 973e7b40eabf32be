import assert from 'node:assert/strict';
import { readdir, readFile, readlink } from 'node:fs/promises';
import { get as httpGet } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { errorCodes, pushBlob, randomBlob, sha256, sha512 } from '../helpers/blobs.js';

// the HTTP behaviour; S3 semantics are the driver suite's and the S3 files' (test/storage/s3.test.ts, test/http/s3-redirects.test.ts)
for (const driver of ['filesystem', 'inmemory'] as const) {
  describe(`blobs: GET, HEAD, DELETE (${driver})`, () => {
    let registry: TestRegistry;
    let url: string;
    const blob = randomBlob(1000);
    before(async () => {
      registry = await startBerth({}, { driver });
      url = registry.url;
      assert.equal((await pushBlob(url, 'lib/app', blob.data)).status, 201);
    });
    after(() => registry.stop());

    it('GET serves the blob with its headers', async () => {
      const res = await fetch(`${url}/v2/lib/app/blobs/${blob.digest}`);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-length'), '1000');
      assert.equal(res.headers.get('content-type'), 'application/octet-stream');
      assert.equal(res.headers.get('registry-content-digest'), blob.digest);
      assert.equal(res.headers.get('docker-content-digest'), blob.digest);
      assert.equal(res.headers.get('accept-ranges'), 'bytes');
      assert.equal(res.headers.get('accept-range'), 'bytes');
      assert.equal(res.headers.get('etag'), `"${blob.digest}"`);
      assert.equal(res.headers.get('cache-control'), 'max-age=31536000');
      assert.deepEqual(Buffer.from(await res.arrayBuffer()), blob.data);
    });

    it('HEAD has the same headers and no body', async () => {
      const res = await fetch(`${url}/v2/lib/app/blobs/${blob.digest}`, { method: 'HEAD' });
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-length'), '1000');
      assert.equal(res.headers.get('registry-content-digest'), blob.digest);
      assert.equal(res.headers.get('accept-range'), 'bytes');
      assert.equal((await res.arrayBuffer()).byteLength, 0);
    });

    it('If-None-Match with the ETag answers 304', async () => {
      const res = await fetch(`${url}/v2/lib/app/blobs/${blob.digest}`, { headers: { 'if-none-match': `"${blob.digest}"` } });
      assert.equal(res.status, 304);
      assert.equal((await res.arrayBuffer()).byteLength, 0);
    });

    const ranges: [string, number, number][] = [
      ['bytes=0-0', 0, 0],
      ['bytes=10-19', 10, 19],
      ['bytes=990-', 990, 999],
      ['bytes=-5', 995, 999],
      ['bytes=900-5000', 900, 999],
      // several ranges: the first satisfiable one, as a single part (docs/decisions.md, "Hardening")
      ['bytes=0-1,5-6', 0, 1],
      ['bytes=2000-3000, 5-6', 5, 6],
    ];
    for (const [header, start, end] of ranges) {
      it(`Range ${header} answers 206 with bytes ${start}-${end}`, async () => {
        const res = await fetch(`${url}/v2/lib/app/blobs/${blob.digest}`, { headers: { range: header } });
        assert.equal(res.status, 206);
        assert.equal(res.headers.get('content-range'), `bytes ${start}-${end}/1000`);
        assert.equal(res.headers.get('content-length'), String(end - start + 1));
        assert.equal(res.headers.get('content-type'), 'application/octet-stream');
        assert.deepEqual(Buffer.from(await res.arrayBuffer()), blob.data.subarray(start, end + 1));
      });
    }

    for (const header of ['bytes=5-2', 'bytes=1000-', 'bytes=2000-3000', 'bytes=-0', 'bytes=abc', 'items=0-1', 'bytes=0-1,abc', 'bytes=1000-,2000-', 'bytes=-']) {
      it(`Range ${header} answers 416 RANGE_INVALID`, async () => {
        const res = await fetch(`${url}/v2/lib/app/blobs/${blob.digest}`, { headers: { range: header } });
        assert.equal(res.status, 416);
        assert.equal(res.headers.get('content-range'), 'bytes */1000', 'RFC 7233 4.4: the current length');
        assert.deepEqual(await errorCodes(res), ['RANGE_INVALID']);
      });
    }

    it('an unknown blob is 404 BLOB_UNKNOWN; HEAD has no body', async () => {
      const missing = randomBlob(10).digest;
      const res = await fetch(`${url}/v2/lib/app/blobs/${missing}`);
      assert.equal(res.status, 404);
      const body = (await res.json()) as { errors: { code: string; detail: unknown }[] };
      assert.equal(body.errors[0].code, 'BLOB_UNKNOWN');
      assert.deepEqual(body.errors[0].detail, { digest: missing });
      const head = await fetch(`${url}/v2/lib/app/blobs/${missing}`, { method: 'HEAD' });
      assert.equal(head.status, 404);
      assert.equal((await head.arrayBuffer()).byteLength, 0);
    });

    it('a blob stored for one repository is unknown in another', async () => {
      const res = await fetch(`${url}/v2/other/blobs/${blob.digest}`);
      assert.equal(res.status, 404);
      assert.deepEqual(await errorCodes(res), ['BLOB_UNKNOWN']);
    });

    for (const digest of ['sha256:abc', 'sha256:' + 'A'.repeat(64), 'md5:' + 'a'.repeat(32), 'nodigest', 'sha256:' + 'g'.repeat(64), 'sha512:' + 'a'.repeat(64), 'sha512:' + 'A'.repeat(128)]) {
      it(`GET and DELETE with the digest ${digest.slice(0, 20)}… answer 400 DIGEST_INVALID`, async () => {
        const res = await fetch(`${url}/v2/lib/app/blobs/${digest}`);
        assert.equal(res.status, 400);
        assert.deepEqual(await errorCodes(res), ['DIGEST_INVALID']);
        const del = await fetch(`${url}/v2/lib/app/blobs/${digest}`, { method: 'DELETE' });
        assert.equal(del.status, 400);
        assert.deepEqual(await errorCodes(del), ['DIGEST_INVALID']);
      });
    }

    it('a sha512 blob: GET, HEAD and ranges by its digest, with it in the digest headers; DELETE by it', async () => {
      const data = randomBlob(1000).data;
      const digest = sha512(data);
      assert.equal((await pushBlob(url, 'lib/sha512', data, digest)).status, 201);
      const res = await fetch(`${url}/v2/lib/sha512/blobs/${digest}`);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('registry-content-digest'), digest);
      assert.equal(res.headers.get('etag'), `"${digest}"`);
      assert.deepEqual(Buffer.from(await res.arrayBuffer()), data);
      const head = await fetch(`${url}/v2/lib/sha512/blobs/${digest}`, { method: 'HEAD' });
      assert.equal(head.headers.get('content-length'), '1000');
      assert.equal(head.headers.get('docker-content-digest'), digest);
      const range = await fetch(`${url}/v2/lib/sha512/blobs/${digest}`, { headers: { range: 'bytes=10-19' } });
      assert.equal(range.status, 206);
      assert.deepEqual(Buffer.from(await range.arrayBuffer()), data.subarray(10, 20));
      // stored once, under sha512: its sha256 names nothing
      assert.equal((await fetch(`${url}/v2/lib/sha512/blobs/${sha256(data)}`, { method: 'HEAD' })).status, 404);
      const del = await fetch(`${url}/v2/lib/sha512/blobs/${digest}`, { method: 'DELETE' });
      assert.equal(del.status, 202);
      assert.equal(del.headers.get('registry-content-digest'), digest);
      assert.deepEqual(await errorCodes(await fetch(`${url}/v2/lib/sha512/blobs/${digest}`)), ['BLOB_UNKNOWN']);
    });

    it('DELETE removes the repository link only: 202, then 404; other repositories keep the blob', async () => {
      const shared = randomBlob(64);
      assert.equal((await pushBlob(url, 'one', shared.data)).status, 201);
      assert.equal((await pushBlob(url, 'two', shared.data)).status, 201);
      const del = await fetch(`${url}/v2/one/blobs/${shared.digest}`, { method: 'DELETE' });
      assert.equal(del.status, 202);
      assert.equal(del.headers.get('registry-content-digest'), shared.digest);
      assert.equal(del.headers.get('docker-content-digest'), shared.digest);
      assert.equal(del.headers.get('content-length'), '0');
      assert.equal((await fetch(`${url}/v2/one/blobs/${shared.digest}`)).status, 404);
      const again = await fetch(`${url}/v2/one/blobs/${shared.digest}`, { method: 'DELETE' });
      assert.equal(again.status, 404);
      assert.deepEqual(await errorCodes(again), ['BLOB_UNKNOWN']);
      const other = await fetch(`${url}/v2/two/blobs/${shared.digest}`);
      assert.equal(other.status, 200);
      assert.deepEqual(Buffer.from(await other.arrayBuffer()), shared.data);
    });
  });
}

describe('blobs: deletes disabled and read-only mode', () => {
  it('DELETE answers 405 UNSUPPORTED when deletes are disabled, and the blob stays', async () => {
    const registry = await startBerth({ storage: { delete: { enabled: false } } });
    try {
      const blob = randomBlob(10);
      assert.equal((await pushBlob(registry.url, 'r', blob.data)).status, 201);
      const res = await fetch(`${registry.url}/v2/r/blobs/${blob.digest}`, { method: 'DELETE' });
      assert.equal(res.status, 405);
      assert.deepEqual(await errorCodes(res), ['UNSUPPORTED']);
      assert.equal((await fetch(`${registry.url}/v2/r/blobs/${blob.digest}`)).status, 200);
    } finally {
      await registry.stop();
    }
  });

  it('read-only mode refuses uploads and deletes with 405 UNSUPPORTED but serves reads', async () => {
    const writable = await startBerth();
    const blob = randomBlob(10);
    assert.equal((await pushBlob(writable.url, 'r', blob.data)).status, 201);
    const root = writable.root!;
    await writable.app.close();
    const readonly = await startBerth({ storage: { maintenance: { readonly: { enabled: true } } } }, { root });
    try {
      const get = await fetch(`${readonly.url}/v2/r/blobs/${blob.digest}`);
      assert.equal(get.status, 200);
      assert.deepEqual(Buffer.from(await get.arrayBuffer()), blob.data);
      const post = await fetch(`${readonly.url}/v2/r/blobs/uploads/`, { method: 'POST' });
      assert.equal(post.status, 405);
      assert.deepEqual(await errorCodes(post), ['UNSUPPORTED']);
      const del = await fetch(`${readonly.url}/v2/r/blobs/${blob.digest}`, { method: 'DELETE' });
      assert.equal(del.status, 405);
      const stored = await readFile(join(root, 'docker/registry/v2/blobs/sha256', blob.digest.slice(7, 9), blob.digest.slice(7), 'data'));
      assert.deepEqual(stored, blob.data);
    } finally {
      await readonly.stop();
      await writable.stop();
    }
  });
});

describe('blobs: a client that goes away mid-download (filesystem)', () => {
  it('closes the file, and the blob is served whole to the next client', async () => {
    const registry = await startBerth();
    try {
      const blob = randomBlob(16 * 1024 * 1024);
      assert.equal((await pushBlob(registry.url, 'r', blob.data)).status, 201);
      const dataFile = join(registry.root!, 'docker/registry/v2/blobs/sha256', blob.digest.slice(7, 9), blob.digest.slice(7), 'data');
      const received = await new Promise<number>((resolve, reject) => {
        const req = httpGet(`${registry.url}/v2/r/blobs/${blob.digest}`, (res) => {
          res.once('data', (chunk: Buffer) => {
            req.destroy(); // after the first bytes, well before the 16 MiB
            resolve(chunk.length);
          });
        });
        req.on('error', (err) => (req.destroyed ? undefined : reject(err)));
      });
      assert.ok(received < blob.data.length);
      await waitFor(async () => (await openDescriptorsOf(dataFile)) === 0, 'the server to close the blob file');
      const again = await fetch(`${registry.url}/v2/r/blobs/${blob.digest}`);
      assert.equal(again.status, 200);
      assert.equal(sha256(Buffer.from(await again.arrayBuffer())), blob.digest);
      assert.equal(await openDescriptorsOf(dataFile), 0);
    } finally {
      await registry.stop();
    }
  });
});

/** how many of this process's file descriptors are open on `file` (the registry runs in-process) */
async function openDescriptorsOf(file: string): Promise<number> {
  let count = 0;
  for (const fd of await readdir('/proc/self/fd')) {
    if ((await readlink(`/proc/self/fd/${fd}`).catch(() => '')) === file) count++;
  }
  return count;
}

async function waitFor(check: () => Promise<boolean>, what: string, timeoutMs = 5000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}
