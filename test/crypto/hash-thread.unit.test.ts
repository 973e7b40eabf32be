/** The hashing thread (src/crypto/hash-thread.ts): its digests are those of node:crypto, whatever the pieces. */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { threadHash } from '../../src/crypto/hash-thread.js';

const MiB = 1024 * 1024;

describe('the hashing thread', () => {
  it('computes the digest of every byte given, across slots and in order, for each algorithm', async () => {
    const data = randomBytes(9 * MiB + 777);
    for (const algorithm of ['sha256', 'sha384', 'sha512']) {
      const hash = threadHash(algorithm);
      // pieces of odd sizes, several per update, some larger than a slot
      for (let at = 0, n = 1; at < data.length; n++) {
        const pieces: Buffer[] = [];
        for (let i = 0; i < 3 && at < data.length; i++) {
          const size = Math.min(((n * 7919 + i * 104729) % (2 * MiB)) + 1, data.length - at);
          pieces.push(data.subarray(at, at + size));
          at += size;
        }
        await hash.update(pieces);
      }
      assert.equal(await hash.digest(), createHash(algorithm).update(data).digest('hex'), algorithm);
    }
  });

  it('keeps concurrent hashes apart, and a dropped one does not disturb the others', async () => {
    const a = randomBytes(6 * MiB);
    const b = randomBytes(5 * MiB);
    const ha = threadHash('sha256');
    const hb = threadHash('sha256');
    const dropped = threadHash('sha256');
    const feed = async (hash: ReturnType<typeof threadHash>, data: Buffer) => {
      for (let at = 0; at < data.length; at += 300_000) await hash.update([data.subarray(at, at + 300_000)]);
    };
    await Promise.all([feed(ha, a), feed(hb, b), feed(dropped, randomBytes(2 * MiB))]);
    dropped.drop();
    assert.deepEqual(await Promise.all([ha.digest(), hb.digest()]), [createHash('sha256').update(a).digest('hex'), createHash('sha256').update(b).digest('hex')]);
  });

  it('keeps eight hashes apart that wait for a slot at once, each woken by the same freed slot', async () => {
    const blobs = Array.from({ length: 8 }, (_, i) => randomBytes(3 * MiB + i * 4099));
    const digests = await Promise.all(
      blobs.map(async (data) => {
        const hash = threadHash('sha256');
        // pieces larger than a slot: each update takes two slots, so the eight contend for the eight slots
        for (let at = 0; at < data.length; at += MiB + 17) await hash.update([data.subarray(at, at + MiB + 17)]);
        return hash.digest();
      }),
    );
    assert.deepEqual(digests, blobs.map((data) => createHash('sha256').update(data).digest('hex')));
  });

  it('gives the digest of nothing for a hash given no bytes', async () => {
    assert.equal(await threadHash('sha256').digest(), createHash('sha256').digest('hex'));
  });
});

/**
 * the threads of this process as they are now: by thread id, voluntary context switches (each sleep
 * is one) and CPU ticks (user + system) so far (Linux's /proc)
 */
function threads(): Map<string, { switches: number; ticks: number }> {
  const found = new Map<string, { switches: number; ticks: number }>();
  for (const tid of readdirSync('/proc/self/task')) {
    try {
      const status = readFileSync(`/proc/self/task/${tid}/status`, 'utf8');
      // the fields after the command's closing parenthesis: utime and stime are the 12th and 13th
      const line = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      const stat = line.slice(line.lastIndexOf(')') + 2).split(' ');
      found.set(tid, { switches: Number(/^voluntary_ctxt_switches:\s+(\d+)/m.exec(status)![1]), ticks: Number(stat[11]) + Number(stat[12]) });
    } catch {
      // a thread that ended while it was listed
    }
  }
  return found;
}

/** the threads this process had before any test here used the hashing thread, which starts on first use */
const threadsAtLoad = process.platform === 'linux' ? new Set(threads().keys()) : new Set<string>();

describe('the hashing thread, woken', () => {
  it('sleeps and wakes once per several slots of a running upload, not once per slot', { skip: process.platform !== 'linux' }, async () => {
    const hash = threadHash('sha256');
    const data = randomBytes(MiB);
    await hash.update([data]);
    const start = threads();
    const expected = createHash('sha256');
    for (let i = 0; i < 64; i++) {
      await hash.update([data]);
      expected.update(data);
      await new Promise((resolve) => setImmediate(resolve)); // the thread catches up meanwhile, as it does between a fetch's batches
    }
    const end = threads();
    assert.equal(await hash.digest(), expected.update(data).digest('hex'));
    // the hashing thread: of the threads started since this file loaded, the one that worked most
    // here (it hashed the 64 MiB). Not the thread that slept most: on a loaded machine the main
    // thread, waiting for a free slot, and the thread pool's sleep more than it does
    const since = [...end]
      .filter(([tid]) => !threadsAtLoad.has(tid) && start.has(tid))
      .map(([tid, now]) => ({ tid, slept: now.switches - start.get(tid)!.switches, worked: now.ticks - start.get(tid)!.ticks }))
      .sort((a, b) => b.worked - a.worked);
    assert.ok(since.length > 0, 'the hashing thread is among the threads started since this file loaded');
    // each of its sleeps is a voluntary switch (62 and 40 before the change, 9-13 after)
    assert.ok(since[0].slept <= 24, `the hashing thread slept ${since[0].slept} times for 64 slots`);
  });
});
