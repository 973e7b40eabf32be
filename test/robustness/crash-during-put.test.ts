/**
 * "A blob appears under blobs/ only after its digest was verified; a kill -9 during a PUT never
 * leaves a corrupt blob that is served."
 *
 * berth (a child process) takes a large PUT ?digest= and is SIGKILLed early, in the middle, and
 * right after the last byte was sent (then again a few milliseconds later, to land in the commit
 * window: verify, move to blobs/, link). A new server on the same root must not serve the blob
 * unless it is complete and exact, and every file under blobs/ must hash to the digest its path
 * names. A PUT with a wrong digest leaves nothing under blobs/.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import {
  blobFiles,
  MiB,
  PatternBlob,
  rangeSize,
  startBerthProcess,
  streamDownload,
  streamRequest,
  verifyBlobStore,
  type BerthProcess,
  type StreamResult,
} from '../helpers/berth-process.js';

const NAME = 'crash/put';

/**
 * When the server is killed: once it has stored this many body bytes (the client then stops
 * sending); `afterLastByteMs` after the whole body was handed to the OS; or `afterAllStoredMs` after
 * the upload's status first reports every byte stored (the server is then verifying and committing).
 */
type KillPoint = { label: string; stored: number } | { label: string; afterLastByteMs: number } | { label: string; afterAllStoredMs: number };

async function uploadSize(location: URL): Promise<number> {
  const res = await fetch(location);
  assert.equal(res.status, 204, await res.text());
  return rangeSize(res.headers.get('range') ?? undefined);
}

/** polls the upload's stored size until it reaches `target` (bounded) */
async function waitStored(location: URL, target: number, timeoutMs = 20_000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  let size = 0;
  while (Date.now() < deadline) {
    size = await uploadSize(location);
    if (size >= target) return size;
    await sleep(20);
  }
  throw new Error(`the upload held ${size} bytes after ${timeoutMs} ms, waiting for ${target}`);
}

/**
 * Starts a server on `root`, begins PUT <upload>?digest= with `blob`, kills the server with SIGKILL
 * at `point`, and returns what the client saw (a response if the server answered first).
 */
async function putAndKill(root: string, blob: PatternBlob, point: KillPoint): Promise<{ outcome: StreamResult | Error; server: BerthProcess; location: URL }> {
  const server = await startBerthProcess({ root });
  try {
    return await putAndKillOn(server, blob, point);
  } catch (err) {
    await server.stop();
    throw err;
  }
}

async function putAndKillOn(server: BerthProcess, blob: PatternBlob, point: KillPoint): Promise<{ outcome: StreamResult | Error; server: BerthProcess; location: URL }> {
  const post = await fetch(`${server.url}/v2/${NAME}/blobs/uploads/`, { method: 'POST' });
  assert.equal(post.status, 202);
  const location = new URL(post.headers.get('location')!, server.url);
  const put = new URL(location);
  put.searchParams.set('digest', blob.digest());

  let killing: Promise<unknown> | undefined;
  const kill = () => (killing ??= server.kill9());
  if ('afterAllStoredMs' in point) {
    // poll as fast as the status answers; stop once every byte is stored or the upload is gone (completed)
    void (async () => {
      const deadline = Date.now() + 60_000;
      while (Date.now() < deadline && !killing) {
        const res = await fetch(location).catch(() => undefined);
        await res?.arrayBuffer().catch(() => undefined);
        if (!res || res.status !== 204 || rangeSize(res.headers.get('range') ?? undefined) >= blob.size) break;
      }
      await sleep(point.afterAllStoredMs);
    })()
      .catch(() => undefined)
      .then(kill);
  }
  let bodyError: unknown;
  const body = (async function* () {
    if ('stored' in point) {
      yield* blob.chunks(0, point.stored);
      try {
        // the server persists in writes of up to 1 MiB: the last part of what was sent may still be pending
        await waitStored(location, point.stored - MiB);
      } catch (err) {
        bodyError = err;
        throw err;
      }
      await kill();
    }
    yield* blob.chunks('stored' in point ? point.stored : 0); // after a kill: fails on the dead connection
  })();
  const outcome = await streamRequest(put, {
    method: 'PUT',
    headers: { 'content-length': blob.size },
    body,
    onSent: 'afterLastByteMs' in point ? () => void sleep(point.afterLastByteMs).then(kill) : undefined,
  }).then(
    (res) => res,
    (err: Error) => err,
  );
  await kill(); // in case the server answered before the kill
  if (bodyError) throw bodyError;
  return { outcome, server, location };
}

/** what a restarted server makes of the blob: 404, or exactly its bytes */
async function checkServed(server: BerthProcess, blob: PatternBlob): Promise<boolean> {
  const url = `${server.url}/v2/${NAME}/blobs/${blob.digest()}`;
  const head = await streamDownload(url, 'HEAD');
  const get = await streamDownload(url);
  assert.equal(head.status, get.status, 'HEAD and GET disagree');
  if (get.status === 404) return false;
  assert.equal(get.status, 200);
  assert.equal(Number(head.headers['content-length']), blob.size);
  assert.equal(get.size, blob.size, 'a served blob has all its bytes');
  assert.equal(get.digest, blob.digest(), 'a served blob has the right bytes');
  return true;
}

const hexOf = (blob: PatternBlob) => blob.digest().slice('sha256:'.length);
const describeOutcome = (outcome: StreamResult | Error) => (outcome instanceof Error ? `client saw ${outcome.message}` : `client got ${outcome.status}`);

describe('kill -9 during a PUT never leaves a corrupt blob that is served (child processes)', () => {
  const big = 300 * MiB;
  const points: { size: number; point: KillPoint }[] = [
    { size: big, point: { label: 'early (16 MiB stored)', stored: 16 * MiB } },
    { size: big, point: { label: 'middle (150 MiB stored)', stored: 150 * MiB } },
    { size: big, point: { label: 'right after the last byte was sent', afterLastByteMs: 0 } },
    // the commit window (verify, move to blobs/, link, remove the upload) is short: probe around it
    ...[5, 25].map((ms) => ({ size: 32 * MiB, point: { label: `${ms} ms after the last byte of a 32 MiB PUT was sent`, afterLastByteMs: ms } })),
    ...[0, 1, 3].map((ms) => ({ size: 32 * MiB, point: { label: `${ms} ms after the server stored the last byte of a 32 MiB PUT`, afterAllStoredMs: ms } })),
  ];

  for (const { size, point } of points) {
    it(`SIGKILL ${point.label}: after a restart the blob is 404 or exact, blobs/ holds only verified content, the upload can be finished`, { timeout: 60_000 }, async () => {
      const root = await mkdtemp(join(tmpdir(), 'berth-crash-put-'));
      let killed: BerthProcess | undefined;
      let server: BerthProcess | undefined;
      try {
        const blob = new PatternBlob(size + 17);
        blob.digest(); // computed before the clock matters
        const attempt = await putAndKill(root, blob, point);
        const { outcome, location } = attempt;
        killed = attempt.server;
        assert.ok(killed.hasExited());
        if ('stored' in point) assert.ok(outcome instanceof Error, `the PUT ${describeOutcome(outcome)} although its server was killed mid-body`);

        server = await startBerthProcess({ root });
        const served = await checkServed(server, blob);
        const verified = await verifyBlobStore(root); // every data file hashes to its path
        const committed = verified.includes(hexOf(blob));
        if ('stored' in point) {
          assert.equal(served, false, 'a blob whose PUT was killed mid-body is served');
          assert.ok(!committed, 'an incomplete upload reached blobs/');
        }

        // the interrupted upload still works: finish it from where the new server says it stands
        let finished = 'nothing left to do';
        const status = await fetch(new URL(location.pathname + location.search, server.url));
        if (!served) {
          assert.ok(outcome instanceof Error || outcome.status !== 201, 'the PUT answered 201 but the blob is not served');
          assert.equal(status.status, 204, 'the blob is not served and its upload is gone');
          const k = rangeSize(status.headers.get('range') ?? undefined);
          // a kill loses at most the write that was still gathering (under 1 MiB) of the request in flight
          if ('stored' in point) assert.ok(k >= point.stored - MiB && k < blob.size, `the upload holds ${k} bytes, ${point.stored - MiB} or more were stored before the kill`);
          const put = new URL(status.headers.get('location')!, server.url);
          put.searchParams.set('digest', blob.digest());
          // every byte may have arrived before the kill (then the PUT only needs repeating, without a body)
          const res = await streamRequest(
            put,
            k === blob.size ? { method: 'PUT' } : { method: 'PUT', headers: { 'content-range': `${k}-${blob.size - 1}`, 'content-length': blob.size - k }, body: blob.chunks(k) },
          );
          assert.equal(res.status, 201, res.body);
          assert.ok(await checkServed(server, blob), 'once finished, the blob is served');
          finished = `finished the upload from byte ${k}`;
        } else {
          await status.arrayBuffer();
        }
        assert.ok((await verifyBlobStore(root)).includes(hexOf(blob)));
        console.log(`[crash] SIGKILL ${point.label}: ${describeOutcome(outcome)}; after restart the blob was ${served ? 'served (exact)' : '404'}, ${committed ? 'in' : 'not in'} blobs/; ${finished}`);
      } finally {
        await killed?.stop();
        await server?.stop();
        await rm(root, { recursive: true, force: true });
      }
    });
  }

  it('a PUT with a wrong digest leaves nothing under blobs/ and discards the upload', { timeout: 60_000 }, async () => {
    const fresh = await mkdtemp(join(tmpdir(), 'berth-wrong-digest-'));
    const s = await startBerthProcess({ root: fresh });
    try {
      const blob = new PatternBlob(8 * MiB);
      const wrong = new PatternBlob(8 * MiB).digest();
      const post = await fetch(`${s.url}/v2/${NAME}/blobs/uploads/`, { method: 'POST' });
      const location = new URL(post.headers.get('location')!, s.url);
      const put = new URL(location);
      put.searchParams.set('digest', wrong);
      const res = await streamRequest(put, { method: 'PUT', headers: { 'content-length': blob.size }, body: blob.chunks() });
      assert.equal(res.status, 400, res.body);
      assert.deepEqual(JSON.parse(res.body).errors.map((e: { code: string }) => e.code), ['DIGEST_INVALID']);
      assert.equal((await fetch(location)).status, 404, 'the upload is discarded');

      const mono = await streamRequest(`${s.url}/v2/${NAME}/blobs/uploads/?digest=${wrong}`, { method: 'POST', headers: { 'content-length': blob.size }, body: blob.chunks() });
      assert.equal(mono.status, 400, mono.body);

      assert.deepEqual(await blobFiles(fresh), [], 'files under blobs/ after wrong-digest uploads');
      for (const digest of [wrong, blob.digest()]) assert.equal((await streamDownload(`${s.url}/v2/${NAME}/blobs/${digest}`, 'HEAD')).status, 404);
      const uploads = await readdir(join(fresh, 'docker/registry/v2/repositories', NAME, '_uploads')).catch(() => [] as string[]);
      assert.deepEqual(uploads, [], 'discarded uploads are removed');
    } finally {
      await s.stop();
      await rm(fresh, { recursive: true, force: true });
    }
  });
});
