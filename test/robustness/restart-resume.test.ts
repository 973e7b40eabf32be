/**
 * "Hash while writing; after a restart in the middle of an upload, the upload continues (status
 * reports the persisted offset) and the digest still checks out."
 *
 * Server A (a child process) takes the first part of an upload, then dies: a clean stop (SIGTERM)
 * or SIGKILL, the latter also in the middle of a second PATCH. Server B starts on the same root with
 * the same http.secret, answers the old Location with the persisted offset, takes the rest from
 * there, and accepts the digest of the whole content (so it re-hashed the stored bytes).
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import { MiB, PatternBlob, rangeSize, startBerthProcess, streamDownload, streamRequest, verifyBlobStore, type BerthProcess } from '../helpers/berth-process.js';

const NAME = 'restart/resume';

/** polls the upload's status until its size has stayed the same for `quietMs` */
async function settledSize(location: URL, quietMs = 300, timeoutMs = 15_000): Promise<number> {
  const deadline = Date.now() + timeoutMs;
  let last = -1;
  let since = Date.now();
  while (Date.now() < deadline) {
    const res = await fetch(location);
    assert.equal(res.status, 204);
    const size = rangeSize(res.headers.get('range') ?? undefined);
    if (size !== last) {
      last = size;
      since = Date.now();
    } else if (Date.now() - since >= quietMs) return size;
    await sleep(50);
  }
  throw new Error(`upload size did not settle within ${timeoutMs} ms (last ${last})`);
}

type Death = 'clean stop' | 'SIGKILL' | 'SIGKILL mid-PATCH';

describe('an upload survives a restart of the server (child processes)', () => {
  for (const death of ['clean stop', 'SIGKILL', 'SIGKILL mid-PATCH'] as Death[]) {
    it(`${death} of A; B on the same root continues from the persisted offset and the digest checks out`, { timeout: 90_000 }, async () => {
      const root = await mkdtemp(join(tmpdir(), 'berth-restart-'));
      const servers: BerthProcess[] = [];
      try {
        const blob = new PatternBlob(48 * MiB + 12345);
        const firstPart = 16 * MiB + 777; // not chunk-aligned on purpose
        const a = await startBerthProcess({ root });
        servers.push(a);

        const start = await fetch(`${a.url}/v2/${NAME}/blobs/uploads/`, { method: 'POST' });
        assert.equal(start.status, 202);
        const first = await streamRequest(new URL(start.headers.get('location')!, a.url), { method: 'PATCH', body: blob.chunks(0, firstPart) });
        assert.equal(first.status, 202, first.body);
        assert.equal(first.headers.range, `0-${firstPart - 1}`);
        const oldLocation = new URL(first.headers.location!, a.url);

        let persistedAtLeast = firstPart;
        if (death === 'clean stop') {
          const exit = await a.stop();
          assert.deepEqual(exit, { code: 0, signal: null }, `A did not exit cleanly:\n${a.logs()}`);
        } else if (death === 'SIGKILL') {
          const exit = await a.kill9();
          assert.equal(exit.signal, 'SIGKILL');
        } else {
          // a second PATCH streams on; A is killed once it has stored some of it
          let killed = false;
          const second = streamRequest(oldLocation, {
            method: 'PATCH',
            body: (async function* () {
              yield* blob.chunks(firstPart, firstPart + 8 * MiB);
              const grown = await settledSize(oldLocation, 200);
              assert.ok(grown > firstPart, `A stored nothing of the second PATCH (size ${grown})`);
              persistedAtLeast = grown;
              killed = true; // before: the PATCH fails as soon as the socket closes, before kill9() returns
              await a.kill9();
              yield* blob.chunks(firstPart + 8 * MiB, blob.size); // fails: the server is gone
            })(),
          });
          const outcome = await second.then(
            (res) => `answered ${res.status}`,
            (err: Error) => err,
          );
          assert.ok(killed, `A was not killed mid-PATCH: the PATCH ${outcome instanceof Error ? `failed first: ${outcome.stack}` : outcome}`);
          assert.ok(outcome instanceof Error, `the PATCH ${outcome} although its server was killed`);
          await a.kill9(); // returns once A has exited
          assert.ok(a.hasExited());
        }

        const b = await startBerthProcess({ root });
        servers.push(b);
        // the Location A issued, pointed at B
        const location = new URL(oldLocation.pathname + oldLocation.search, b.url);
        const status = await fetch(location);
        assert.equal(status.status, 204, await status.text());
        const persisted = rangeSize(status.headers.get('range') ?? undefined);
        assert.equal(status.headers.get('range'), `0-${persisted - 1}`);
        if (death === 'SIGKILL mid-PATCH') {
          assert.ok(persisted >= persistedAtLeast && persisted < blob.size, `persisted ${persisted}, expected at least ${persistedAtLeast}`);
        } else {
          assert.equal(persisted, firstPart);
        }
        console.log(`[restart] ${death}: B reports ${persisted} of ${blob.size} bytes persisted`);

        const rest = await streamRequest(location, {
          method: 'PATCH',
          headers: { 'content-range': `${persisted}-${blob.size - 1}`, 'content-length': blob.size - persisted },
          body: blob.chunks(persisted),
        });
        assert.equal(rest.status, 202, rest.body);
        assert.equal(rest.headers.range, `0-${blob.size - 1}`);

        const done = new URL(rest.headers.location!, b.url);
        done.searchParams.set('digest', blob.digest());
        const put = await streamRequest(done, { method: 'PUT' });
        assert.equal(put.status, 201, put.body);
        assert.equal(put.headers['registry-content-digest'], blob.digest());

        const got = await streamDownload(`${b.url}/v2/${NAME}/blobs/${blob.digest()}`);
        assert.equal(got.status, 200);
        assert.equal(got.size, blob.size);
        assert.equal(got.digest, blob.digest());
        assert.deepEqual(await verifyBlobStore(root), [blob.digest().slice('sha256:'.length)]);
      } finally {
        for (const server of servers) await server.stop();
        await rm(root, { recursive: true, force: true });
      }
    });
  }
});
