// berth and Debian's docker-registry (CNCF Distribution 2.8.2+ds1) run side by side on ONE
// filesystem root (DESIGN.md section 3: berth uses Distribution's storage layout). Every blob
// pushed to one of them must be served, byte for byte, by the other; deletes must be seen by
// both; an upload session cannot be moved from one to the other (their `_state` tokens differ),
// and trying must not corrupt it.
//
// The reference has no monolithic POST (it opens a session and ignores the body), and no blob
// descriptor cache is configured for it, so every request it serves reads the shared disk.

import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { indexDifferences, reconcileNow } from '../helpers/index-sync.js';
import { randomBlob, sha256 } from '../helpers/blobs.js';
import { startReferenceRegistry, type ReferenceRegistry } from '../helpers/reference-registry.js';
import { assertTool, needTool } from '../helpers/tools.js';

const MiB = 1024 * 1024;
const OCTETS = { 'content-type': 'application/octet-stream' };

type Blob = { data: Buffer<ArrayBuffer>; digest: string };

/** an upload Location (absolute from the reference, possibly relative from berth) resolved against `base` */
function locationOf(res: Response, base: string): URL {
  const location = res.headers.get('location');
  assert.ok(location, `${res.status} response has a Location`);
  return new URL(location, base);
}

/** the same path and query on another server */
function onServer(url: URL, base: string): URL {
  return new URL(url.pathname + url.search, base);
}

async function errorCode(res: Response): Promise<string | undefined> {
  const text = await res.text();
  try {
    return (JSON.parse(text) as { errors: { code: string }[] }).errors[0]?.code;
  } catch {
    return `non-JSON body: ${text.slice(0, 200)}`;
  }
}

async function startUpload(base: string, repo: string): Promise<URL> {
  const res = await fetch(`${base}/v2/${repo}/blobs/uploads/`, { method: 'POST' });
  assert.equal(res.status, 202, `POST uploads on ${base}: ${await res.text()}`);
  assert.equal(res.headers.get('range'), '0-0');
  return locationOf(res, base);
}

/** PATCH one chunk; returns the next Location after checking the Range the server now reports */
async function patch(base: string, at: URL, chunk: Buffer<ArrayBuffer>, offset: number, withContentRange = true): Promise<URL> {
  const headers: Record<string, string> = { ...OCTETS };
  if (withContentRange) headers['content-range'] = `${offset}-${offset + chunk.length - 1}`;
  const res = await fetch(at, { method: 'PATCH', body: chunk, headers });
  assert.equal(res.status, 202, `PATCH at ${offset} on ${base}: ${await res.text()}`);
  assert.equal(res.headers.get('range'), `0-${offset + chunk.length - 1}`);
  return locationOf(res, base);
}

/** PUT ?digest= with an optional last chunk; asserts 201 and the digest headers */
async function put(base: string, at: URL, digest: string, last?: Buffer<ArrayBuffer>): Promise<void> {
  const url = new URL(at);
  url.searchParams.set('digest', digest);
  const res = await fetch(url, { method: 'PUT', body: last ?? Buffer.alloc(0), headers: OCTETS });
  assert.equal(res.status, 201, `PUT ?digest= on ${base}: ${await res.text()}`);
  assert.equal(res.headers.get('docker-content-digest'), digest);
  const repoPath = at.pathname.replace(/\/blobs\/uploads\/.*$/, '');
  assert.equal(locationOf(res, base).pathname, `${repoPath}/blobs/${digest}`);
}

/** the blob in `chunks` roughly equal pieces */
function split(data: Buffer<ArrayBuffer>, chunks: number): Buffer<ArrayBuffer>[] {
  const size = Math.ceil(data.length / chunks);
  const out: Buffer<ArrayBuffer>[] = [];
  for (let i = 0; i < data.length; i += size) out.push(data.subarray(i, Math.min(i + size, data.length)));
  return out;
}

/** the ranges every blob is read with: first byte, middle, open end, suffix, clamped end */
function rangesFor(size: number): [header: string, start: number, end: number][] {
  const mid = Math.floor(size / 2);
  return [
    ['bytes=0-0', 0, 0],
    [`bytes=${mid}-${mid + 6}`, mid, mid + 6],
    [`bytes=${size - 7}-`, size - 7, size - 1],
    ['bytes=-5', size - 5, size - 1],
    [`bytes=${size - 3}-${size + 100}`, size - 3, size - 1],
  ];
}

/**
 * `base` serves `blob` under `repo`: GET 200 with the exact bytes and digest, HEAD with the size,
 * and the Range reads of rangesFor(). berth also sends Registry-Content-Digest.
 */
async function assertServed(base: string, repo: string, blob: Blob, kind: 'berth' | 'reference'): Promise<void> {
  const url = `${base}/v2/${repo}/blobs/${blob.digest}`;
  const size = blob.data.length;

  const get = await fetch(url);
  assert.equal(get.status, 200, `GET ${url} on ${kind}`);
  assert.equal(get.headers.get('docker-content-digest'), blob.digest);
  if (kind === 'berth') assert.equal(get.headers.get('registry-content-digest'), blob.digest);
  assert.equal(get.headers.get('content-length'), String(size));
  const body = Buffer.from(await get.arrayBuffer());
  assert.equal(body.length, size, `${kind} sent ${body.length} of ${size} bytes`);
  assert.ok(body.equals(blob.data), `${kind} sends the exact bytes (got ${sha256(body)})`);

  const head = await fetch(url, { method: 'HEAD' });
  assert.equal(head.status, 200, `HEAD ${url} on ${kind}`);
  assert.equal(head.headers.get('content-length'), String(size));
  assert.equal(head.headers.get('docker-content-digest'), blob.digest);
  if (kind === 'berth') assert.equal(head.headers.get('registry-content-digest'), blob.digest);
  assert.equal((await head.arrayBuffer()).byteLength, 0);

  for (const [range, start, end] of rangesFor(size)) {
    const res = await fetch(url, { headers: { range } });
    assert.equal(res.status, 206, `${range} on ${kind}`);
    assert.equal(res.headers.get('content-range'), `bytes ${start}-${end}/${size}`, `${range} on ${kind}`);
    assert.equal(res.headers.get('content-length'), String(end - start + 1), `${range} on ${kind}`);
    assert.deepEqual(Buffer.from(await res.arrayBuffer()), blob.data.subarray(start, end + 1), `${range} on ${kind}`);
  }
}

/** `base` answers 404 BLOB_UNKNOWN (GET) and 404 (HEAD) for `blob` under `repo` */
async function assertUnknown(base: string, repo: string, blob: Blob, kind: 'berth' | 'reference'): Promise<void> {
  const url = `${base}/v2/${repo}/blobs/${blob.digest}`;
  const get = await fetch(url);
  assert.equal(get.status, 404, `GET ${url} on ${kind}`);
  assert.equal(await errorCode(get), 'BLOB_UNKNOWN');
  const head = await fetch(url, { method: 'HEAD' });
  assert.equal(head.status, 404, `HEAD ${url} on ${kind}`);
  await head.arrayBuffer();
}

describe(
  "A blob pushed to berth on a filesystem root is served by Debian's docker-registry on the same root, and the other way round",
  needTool('docker-registry', 'the shared-root interop test'),
  () => {
    let root: string | undefined;
    let berth: TestRegistry | undefined;
    let ref: ReferenceRegistry | undefined;
    const B = () => (assert.ok(berth, 'berth started'), berth.url);
    const R = () => (assert.ok(ref, 'reference registry started'), ref.url);
    const v2 = () => join(root!, 'docker', 'registry', 'v2');

    /** the blob's data file is where Distribution keeps it, with the right size */
    async function assertOnDisk(blob: Blob): Promise<void> {
      const hex = blob.digest.slice('sha256:'.length);
      const info = await stat(join(v2(), 'blobs', 'sha256', hex.slice(0, 2), hex, 'data'));
      assert.equal(info.size, blob.data.length);
    }

    /** served by both registries under `repo` */
    async function assertServedByBoth(repo: string, blob: Blob): Promise<void> {
      await assertOnDisk(blob);
      await assertServed(R(), repo, blob, 'reference');
      await assertServed(B(), repo, blob, 'berth');
    }

    before(async () => {
      assertTool('docker-registry', 'the shared-root interop test'); // fails clearly in CI when missing
      root = await mkdtemp(join(tmpdir(), 'berth-interop-root-'));
      berth = await startBerth({ metadata: {} }, { root }); // deletes enabled by the test default
      ref = await startReferenceRegistry({ rootdirectory: root, deleteEnabled: true, config: { log: { level: 'warn' } } });
      assert.notEqual(new URL(berth.url).port, String(ref.port));
    });

    after(async () => {
      // each stop runs even if the other throws; the shared root goes last
      const results = await Promise.allSettled([berth?.stop(), ref?.stop()]);
      if (root) await rm(root, { recursive: true, force: true });
      for (const r of results) if (r.status === 'rejected') throw r.reason;
    });

    describe('pushed to berth, pulled from the reference', () => {
      it('monolithic POST ?digest=', async () => {
        const blob = randomBlob(4099);
        const res = await fetch(`${B()}/v2/interop/berth-mono/blobs/uploads/?digest=${blob.digest}`, { method: 'POST', body: blob.data, headers: OCTETS });
        assert.equal(res.status, 201, await res.text());
        assert.equal(res.headers.get('docker-content-digest'), blob.digest);
        assert.equal(res.headers.get('registry-content-digest'), blob.digest);
        await assertServedByBoth('interop/berth-mono', blob);
      });

      it('chunked: POST, three PATCHes with Content-Range, PUT ?digest= with the last chunk', async () => {
        const blob = randomBlob(10_000);
        const chunks = split(blob.data, 4);
        let at = await startUpload(B(), 'interop/berth-chunked');
        let offset = 0;
        for (const chunk of chunks.slice(0, -1)) {
          at = await patch(B(), at, chunk, offset);
          offset += chunk.length;
        }
        await put(B(), at, blob.digest, chunks[chunks.length - 1]);
        await assertServedByBoth('interop/berth-chunked', blob);
      });

      it('mounted from another repository', async () => {
        const blob = randomBlob(2048);
        const res = await fetch(`${B()}/v2/interop/berth-mount-src/blobs/uploads/?digest=${blob.digest}`, { method: 'POST', body: blob.data, headers: OCTETS });
        assert.equal(res.status, 201, await res.text());
        const mount = await fetch(`${B()}/v2/interop/berth-mount-dst/blobs/uploads/?mount=${blob.digest}&from=interop/berth-mount-src`, { method: 'POST' });
        assert.equal(mount.status, 201, await mount.text());
        assert.equal(mount.headers.get('docker-content-digest'), blob.digest);
        await assertServedByBoth('interop/berth-mount-dst', blob);
        await assertServed(R(), 'interop/berth-mount-src', blob, 'reference');
        // a repository that neither pushed nor mounted it does not see it on either side
        await assertUnknown(R(), 'interop/berth-mount-other', blob, 'reference');
        await assertUnknown(B(), 'interop/berth-mount-other', blob, 'berth');
      });

      it('mounted on berth from a repository the reference pushed to', async () => {
        const blob = randomBlob(3000);
        const at = await startUpload(R(), 'interop/ref-for-berth-mount');
        await put(R(), await patch(R(), at, blob.data, 0), blob.digest);
        const mount = await fetch(`${B()}/v2/interop/berth-mounted-from-ref/blobs/uploads/?mount=${blob.digest}&from=interop/ref-for-berth-mount`, { method: 'POST' });
        assert.equal(mount.status, 201, await mount.text());
        await assertServedByBoth('interop/berth-mounted-from-ref', blob);
      });

      it('32 MiB, in four streamed PATCHes (no Content-Range) and an empty PUT', async () => {
        const blob = randomBlob(32 * MiB);
        let at = await startUpload(B(), 'interop/berth-large');
        let offset = 0;
        for (const chunk of split(blob.data, 4)) {
          at = await patch(B(), at, chunk, offset, false);
          offset += chunk.length;
        }
        await put(B(), at, blob.digest);
        await assertServedByBoth('interop/berth-large', blob);
      });
    });

    describe('pushed to the reference, pulled from berth', () => {
      it('POST, one PATCH, PUT ?digest=', async () => {
        const blob = randomBlob(4099);
        const at = await startUpload(R(), 'interop/ref-simple');
        await put(R(), await patch(R(), at, blob.data, 0), blob.digest);
        await assertServedByBoth('interop/ref-simple', blob);
      });

      it('POST, four PATCHes, PUT ?digest= with the last chunk', async () => {
        const blob = randomBlob(10_001);
        const chunks = split(blob.data, 5);
        let at = await startUpload(R(), 'interop/ref-chunked');
        let offset = 0;
        for (const chunk of chunks.slice(0, -1)) {
          at = await patch(R(), at, chunk, offset);
          offset += chunk.length;
        }
        await put(R(), at, blob.digest, chunks[chunks.length - 1]);
        await assertServedByBoth('interop/ref-chunked', blob);
      });

      it('mounted on the reference from a repository berth pushed to', async () => {
        const blob = randomBlob(3001);
        const res = await fetch(`${B()}/v2/interop/berth-for-ref-mount/blobs/uploads/?digest=${blob.digest}`, { method: 'POST', body: blob.data, headers: OCTETS });
        assert.equal(res.status, 201, await res.text());
        const mount = await fetch(`${R()}/v2/interop/ref-mounted-from-berth/blobs/uploads/?mount=${blob.digest}&from=interop/berth-for-ref-mount`, { method: 'POST' });
        assert.equal(mount.status, 201, await mount.text());
        await assertServedByBoth('interop/ref-mounted-from-berth', blob);
      });

      it('32 MiB in one PATCH, then PUT ?digest=', async () => {
        const blob = randomBlob(32 * MiB);
        const at = await startUpload(R(), 'interop/ref-large');
        await put(R(), await patch(R(), at, blob.data, 0), blob.digest);
        await assertServedByBoth('interop/ref-large', blob);
      });
    });

    describe('an upload cannot move between the two', () => {
      it('started on the reference: berth refuses its URL; the reference completes it intact', async () => {
        const blob = randomBlob(6000);
        const [c1, c2, c3] = split(blob.data, 3);
        const repo = 'interop/ref-upload-to-berth';
        const atRef = await patch(R(), await startUpload(R(), repo), c1, 0);
        const uuid = atRef.pathname.split('/').pop()!;
        // the session lives on the shared disk where berth looks for it
        assert.ok((await stat(join(v2(), 'repositories', repo, '_uploads', uuid, 'startedat'))).isFile());

        // Observed: berth finds the session (startedat is there) but not its own `<payload>.<mac>`
        // _state token in the reference's URL, so GET, PATCH and PUT all answer
        // 400 BLOB_UPLOAD_INVALID (the spec's status for that code; the reference uses 404 for it).
        const onBerth = onServer(atRef, B());
        let res = await fetch(onBerth);
        assert.equal(res.status, 400);
        assert.equal(await errorCode(res), 'BLOB_UPLOAD_INVALID');
        res = await fetch(onBerth, { method: 'PATCH', body: c2, headers: { ...OCTETS, 'content-range': `${c1.length}-${c1.length + c2.length - 1}` } });
        assert.equal(res.status, 400);
        assert.equal(await errorCode(res), 'BLOB_UPLOAD_INVALID');
        const putOnBerth = new URL(onBerth);
        putOnBerth.searchParams.set('digest', blob.digest);
        res = await fetch(putOnBerth, { method: 'PUT', body: Buffer.concat([c2, c3]), headers: OCTETS });
        assert.equal(res.status, 400);
        assert.equal(await errorCode(res), 'BLOB_UPLOAD_INVALID');
        // the same upload path with no _state at all: also 400 BLOB_UPLOAD_INVALID
        res = await fetch(new URL(atRef.pathname, B()));
        assert.equal(res.status, 400);
        assert.equal(await errorCode(res), 'BLOB_UPLOAD_INVALID');
        await assertUnknown(B(), repo, blob, 'berth');

        // nothing was appended or removed: the reference still holds exactly c1 and completes
        res = await fetch(atRef);
        assert.equal(res.status, 204);
        assert.equal(res.headers.get('range'), `0-${c1.length - 1}`);
        assert.equal((await stat(join(v2(), 'repositories', repo, '_uploads', uuid, 'data'))).size, c1.length);
        const next = await patch(R(), atRef, c2, c1.length);
        await put(R(), next, blob.digest, c3);
        await assertServedByBoth(repo, blob);
      });

      it('started on berth: the reference refuses its URL; berth completes it intact', async () => {
        const blob = randomBlob(6000);
        const [c1, c2, c3] = split(blob.data, 3);
        const repo = 'interop/berth-upload-to-ref';
        const atBerth = await patch(B(), await startUpload(B(), repo), c1, 0);
        const uuid = atBerth.pathname.split('/').pop()!;
        assert.ok((await stat(join(v2(), 'repositories', repo, '_uploads', uuid, 'startedat'))).isFile());

        // Observed: the reference cannot decode berth's `<payload>.<mac>` token as its own HMAC'd
        // state, so GET, PATCH and PUT all answer 404 BLOB_UPLOAD_INVALID.
        const onRef = onServer(atBerth, R());
        let res = await fetch(onRef);
        assert.equal(res.status, 404);
        assert.equal(await errorCode(res), 'BLOB_UPLOAD_INVALID');
        res = await fetch(onRef, { method: 'PATCH', body: c2, headers: OCTETS });
        assert.equal(res.status, 404);
        assert.equal(await errorCode(res), 'BLOB_UPLOAD_INVALID');
        const putOnRef = new URL(onRef);
        putOnRef.searchParams.set('digest', blob.digest);
        res = await fetch(putOnRef, { method: 'PUT', body: Buffer.concat([c2, c3]), headers: OCTETS });
        assert.equal(res.status, 404);
        assert.equal(await errorCode(res), 'BLOB_UPLOAD_INVALID');
        await assertUnknown(R(), repo, blob, 'reference');

        res = await fetch(atBerth);
        assert.equal(res.status, 204);
        assert.equal(res.headers.get('range'), `0-${c1.length - 1}`);
        assert.equal((await stat(join(v2(), 'repositories', repo, '_uploads', uuid, 'data'))).size, c1.length);
        const next = await patch(B(), atBerth, c2, c1.length);
        await put(B(), next, blob.digest, c3);
        await assertServedByBoth(repo, blob);
      });
    });

    describe('deletes are seen by both', () => {
      /** pushes `blob` to `repo` on `pusher`, checks both serve it, deletes it on `deleter`, checks both 404 */
      async function pushServeDelete(pusher: 'berth' | 'reference', deleter: 'berth' | 'reference', repo: string): Promise<void> {
        const blob = randomBlob(1500);
        if (pusher === 'berth') {
          const res = await fetch(`${B()}/v2/${repo}/blobs/uploads/?digest=${blob.digest}`, { method: 'POST', body: blob.data, headers: OCTETS });
          assert.equal(res.status, 201, await res.text());
        } else {
          await put(R(), await patch(R(), await startUpload(R(), repo), blob.data, 0), blob.digest);
        }
        // a second repository links the same content, so the data must survive the delete
        const keep = `${repo}-keep`;
        const mount = await fetch(`${B()}/v2/${keep}/blobs/uploads/?mount=${blob.digest}&from=${repo}`, { method: 'POST' });
        assert.equal(mount.status, 201, await mount.text());
        await assertServedByBoth(repo, blob);

        const del = await fetch(`${deleter === 'berth' ? B() : R()}/v2/${repo}/blobs/${blob.digest}`, { method: 'DELETE' });
        assert.equal(del.status, 202, `DELETE on ${deleter}: ${await del.text()}`);

        await assertUnknown(R(), repo, blob, 'reference');
        await assertUnknown(B(), repo, blob, 'berth');
        // deleting again on the other registry: it is gone there too
        const again = await fetch(`${deleter === 'berth' ? R() : B()}/v2/${repo}/blobs/${blob.digest}`, { method: 'DELETE' });
        assert.equal(again.status, 404);
        assert.equal(await errorCode(again), 'BLOB_UNKNOWN');
        // only the repository's link went; the content and the other repository's link stay
        await assertServedByBoth(keep, blob);
      }

      it('pushed to and deleted on berth: 404 on the reference', () => pushServeDelete('berth', 'berth', 'interop/del-berth-berth'));
      it('pushed to and deleted on the reference: 404 on berth', () => pushServeDelete('reference', 'reference', 'interop/del-ref-ref'));
      it('pushed to the reference, deleted on berth: 404 on both', () => pushServeDelete('reference', 'berth', 'interop/del-ref-berth'));
      it('pushed to berth, deleted on the reference: 404 on both', () => pushServeDelete('berth', 'reference', 'interop/del-berth-ref'));
    });

    it("berth's metadata index equals storage once its reconciler ran over the reference's pushes, mounts and deletes", async () => {
      await reconcileNow(berth!);
      assert.deepEqual(await indexDifferences(berth!), []);
    });
  },
);
