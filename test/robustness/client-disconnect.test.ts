/**
 * "A client that disconnects mid-PATCH leaves the upload resumable from the last persisted byte."
 *
 * The client announces Content-Length N, sends only the first N/2 bytes, waits until the server has
 * stored them, and destroys the socket. The upload's status then reports k bytes with 0 < k <= N/2;
 * the rest goes in a PATCH with Content-Range from k, and the PUT's digest is the whole content's.
 * Run against berth in this process and against berth as a child process.
 */
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { MiB, PatternBlob, rangeSize, startBerthProcess, streamDownload, streamRequest, verifyBlobStore } from '../helpers/berth-process.js';

interface Target {
  url: string;
  root: string;
  stop(): Promise<unknown>;
}

const targets: Record<string, () => Promise<Target>> = {
  'in-process': async () => {
    const registry: TestRegistry = await startBerth();
    return { url: registry.url, root: registry.root!, stop: () => registry.stop() };
  },
  'child process': () => startBerthProcess(),
};

async function uploadSize(location: URL): Promise<number> {
  const res = await fetch(location);
  assert.equal(res.status, 204, await res.text());
  return rangeSize(res.headers.get('range') ?? undefined);
}

/** polls until the upload's size has stayed the same for `quietMs` (or reached `target`) */
async function settledSize(location: URL, target: number, quietMs = 300, timeoutMs = 15_000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  let last = -1;
  let since = Date.now();
  while (Date.now() < deadline) {
    const size = await uploadSize(location);
    if (size !== last) {
      last = size;
      since = Date.now();
    }
    if (size >= target || (size > 0 && Date.now() - since >= quietMs)) return size;
    await sleep(25);
  }
  throw new Error(`upload size did not settle within ${timeoutMs} ms (last ${last})`);
}

/**
 * PATCH announcing `length` bytes but sending only `bytes` (`sentBytes` of them), then destroying the
 * socket once the server has stored what it got. Resolves when the socket is closed.
 */
async function abandonedPatch(location: URL, length: number, bytes: Iterable<Buffer>, sentBytes: number): Promise<void> {
  const req = request(location, { method: 'PATCH', headers: { 'content-type': 'application/octet-stream', 'content-length': length } });
  const closed = new Promise<void>((resolve) => req.on('close', () => resolve()));
  req.on('error', () => undefined); // the destroy below is the point
  let answered: number | undefined;
  req.on('response', (res) => {
    answered = res.statusCode;
    res.resume();
  });
  for (const chunk of bytes) {
    if (!req.write(chunk)) await new Promise((resolve) => req.once('drain', resolve));
  }
  await settledSize(location, sentBytes);
  req.destroy();
  await closed;
  assert.equal(answered, undefined, `the server answered ${answered} to a PATCH that was never finished`);
}

for (const [kind, start] of Object.entries(targets)) {
  describe(`a client that disconnects mid-PATCH (${kind})`, () => {
    let target: Target;
    before(async () => {
      target = await start();
    });
    after(async () => {
      await target?.stop();
    });

    it('leaves the upload resumable from the last persisted byte; the completed blob is exact', { timeout: 60_000 }, async () => {
      const blob = new PatternBlob(24 * MiB + 4321);
      const half = Math.floor(blob.size / 2);
      const name = 'disconnect/patch';

      const post = await fetch(`${target.url}/v2/${name}/blobs/uploads/`, { method: 'POST' });
      assert.equal(post.status, 202);
      const location = new URL(post.headers.get('location')!, target.url);

      await abandonedPatch(location, blob.size, blob.chunks(0, half), half);

      // the server may still be closing the abandoned request: wait until the size stops changing
      const k = await settledSize(location, Infinity, 300);
      console.log(`[disconnect ${kind}] announced ${blob.size}, sent ${half}, persisted ${k}`);
      assert.ok(k > 0, 'nothing of the abandoned PATCH was kept');
      assert.ok(k <= half, `the upload holds ${k} bytes, more than the ${half} sent`);

      // a chunk that does not start at k is refused with the offset to resume from
      const wrong = await streamRequest(location, {
        method: 'PATCH',
        headers: { 'content-range': `${k + 1}-${k + 10}`, 'content-length': 10 },
        body: [Buffer.alloc(10)],
      });
      assert.equal(wrong.status, 416, wrong.body);
      assert.equal(wrong.headers.range, `0-${k - 1}`);

      const rest = await streamRequest(location, {
        method: 'PATCH',
        headers: { 'content-range': `${k}-${blob.size - 1}`, 'content-length': blob.size - k },
        body: blob.chunks(k),
      });
      assert.equal(rest.status, 202, rest.body);
      assert.equal(rest.headers.range, `0-${blob.size - 1}`);

      const done = new URL(rest.headers.location!, target.url);
      done.searchParams.set('digest', blob.digest());
      const put = await streamRequest(done, { method: 'PUT' });
      assert.equal(put.status, 201, put.body);

      const got = await streamDownload(`${target.url}/v2/${name}/blobs/${blob.digest()}`);
      assert.equal(got.status, 200);
      assert.equal(got.size, blob.size);
      assert.equal(got.digest, blob.digest());
      assert.ok((await verifyBlobStore(target.root)).includes(blob.digest().slice('sha256:'.length)));
    });

    it('a PUT ?digest= abandoned mid-body leaves the upload open and resumable too', { timeout: 60_000 }, async () => {
      const blob = new PatternBlob(12 * MiB + 99);
      const half = Math.floor(blob.size / 2);
      const name = 'disconnect/put';
      const post = await fetch(`${target.url}/v2/${name}/blobs/uploads/`, { method: 'POST' });
      assert.equal(post.status, 202);
      const location = new URL(post.headers.get('location')!, target.url);

      const putUrl = new URL(location);
      putUrl.searchParams.set('digest', blob.digest());
      const req = request(putUrl, { method: 'PUT', headers: { 'content-type': 'application/octet-stream', 'content-length': blob.size } });
      const closed = new Promise<void>((resolve) => req.on('close', () => resolve()));
      req.on('error', () => undefined);
      for (const chunk of blob.chunks(0, half)) {
        if (!req.write(chunk)) await new Promise((resolve) => req.once('drain', resolve));
      }
      await settledSize(location, half);
      req.destroy();
      await closed;

      const k = await settledSize(location, Infinity, 300);
      assert.ok(k > 0 && k <= half, `persisted ${k} of ${half}`);
      const head = await fetch(`${target.url}/v2/${name}/blobs/${blob.digest()}`, { method: 'HEAD' });
      assert.equal(head.status, 404, 'an incomplete PUT must not create the blob');

      const put = await streamRequest(putUrl, {
        method: 'PUT',
        headers: { 'content-range': `${k}-${blob.size - 1}`, 'content-length': blob.size - k },
        body: blob.chunks(k),
      });
      assert.equal(put.status, 201, put.body);
      const got = await streamDownload(`${target.url}/v2/${name}/blobs/${blob.digest()}`);
      assert.equal(got.digest, blob.digest());
    });
  });
}
