/**
 * Online garbage collection (storage.maintenance.gc): what it collects and when, the protocol
 * that keeps every blob a client relies on (a use recorded meanwhile brings a blob back from the
 * trash), one collector at a time (the shared schedule), and a race of collections against pushes, mounts and deletes, on the
 * filesystem and on S3 (Ceph).
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, describe, it } from 'node:test';
import { pino } from 'pino';
import * as layout from '../../src/registry/layout.js';
import { collectOnline } from '../../src/registry/gc/online.js';
import { collectionTask } from '../../src/registry/gc/task.js';
import { HOLD_MS } from '../../src/registry/shared-schedule.js';
import { systemClock } from '../../src/scheduler/clock.js';
import { TouchingGuard } from '../../src/registry/gc/touch.js';
import type { Digest } from '../../src/registry/digest.js';
import { ForwardingDriver } from '../../src/storage/forwarding.js';
import { unlessMissing, type StorageDriver } from '../../src/storage/driver.js';
import { pushBlob } from '../helpers/blobs.js';
import { AgingStore } from '../helpers/aging-store.js';
import { startBerth } from '../helpers/berth.js';
import { stopSharedCeph } from '../helpers/ceph.js';
import { berthFor, delays, servedWhole } from './online-harness.js';
import { buildImage, pushImageOK, putManifest, type Image } from '../helpers/images.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
/** the digest of `data` in the algorithm of `like` */
const sha = (data: Buffer, like: string) => {
  const algorithm = like.slice(0, like.indexOf(':'));
  return `${algorithm}:${createHash(algorithm).update(data).digest('hex')}`;
};

async function stored(driver: StorageDriver, digest: string): Promise<boolean> {
  return (await unlessMissing(driver.stat(layout.blobData(digest as Digest)))) !== undefined;
}

async function pushBlobsOnly(url: string, name: string, image: Image): Promise<void> {
  for (const blob of image.blobs) assert.equal((await pushBlob(url, name, blob.data, blob.digest)).status, 201);
}

for (const driver of ['filesystem', 's3'] as const) {
  describe(`online garbage collection (${driver})`, () => {
    const { DELAY_MS, AGED_MS } = delays(driver);
    const GC = { storage: { maintenance: { gc: { enabled: true, delay: `${DELAY_MS}ms` } } } };
    after(() => (driver === 's3' ? stopSharedCeph() : undefined));

    const withBerth = berthFor(GC, driver);

    it('moves unreferenced blobs older than the delay to the trash, deletes them at a later collection, keeps every referenced one', async () => {
      await withBerth(async ({ url, app, age }) => {
        const kept = await pushImageOK(url, 'app/kept', buildImage('docker-v2'));
        const orphan = buildImage('docker-v2');
        await pushBlobsOnly(url, 'app/orphan', orphan);
        // a delay no push of this test outlasts, however loaded the machine (the store's clock has
        // not been moved yet: these blobs are as old as the real time the pushes took)
        const young = await collectOnline(app.driver, { delayMs: 60_000, dryRun: false });
        assert.equal(young.blobsTrashed, 0, 'nothing is older than the delay yet');
        assert.ok(young.blobsSpared >= orphan.blobs.length);

        await age(AGED_MS);
        const dry = await collectOnline(app.driver, { delayMs: DELAY_MS, dryRun: true });
        assert.equal(dry.blobsTrashed, orphan.blobs.length);
        for (const blob of orphan.blobs) assert.ok(await stored(app.driver, blob.digest), 'a dry run moves nothing');

        const first = await collectOnline(app.driver, { delayMs: DELAY_MS, dryRun: false });
        assert.equal(first.blobsTrashed, orphan.blobs.length);
        for (const blob of orphan.blobs) assert.equal(await stored(app.driver, blob.digest), false);
        assert.equal(await servedWhole(url, 'app/kept', kept), undefined);

        await age(AGED_MS);
        const second = await collectOnline(app.driver, { delayMs: DELAY_MS, dryRun: false });
        assert.equal(second.blobsPurged, orphan.blobs.length);
        assert.equal(second.bytesFreed, orphan.blobs.reduce((n, b) => n + b.size, 0));
        assert.deepEqual((await unlessMissing(app.driver.listNames(layout.GC_TRASH))) ?? [], []);
        assert.equal(await servedWhole(url, 'app/kept', kept), undefined);
      });
    });

    it('sha512 content: referenced blobs stay; unreferenced ones go to the trash (by hex), a HEAD takes one back, the rest are purged', async () => {
      await withBerth(async ({ url, app, age }) => {
        const kept = await pushImageOK(url, 'sha/kept', buildImage('oci-manifest', { algorithm: 'sha512' }));
        const orphan = buildImage('docker-v2', { algorithm: 'sha512' });
        await pushBlobsOnly(url, 'sha/orphan', orphan);
        await age(AGED_MS);
        const first = await collectOnline(app.driver, { delayMs: DELAY_MS, dryRun: false });
        assert.equal(first.blobsTrashed, orphan.blobs.length);
        for (const blob of orphan.blobs) assert.equal(await stored(app.driver, blob.digest), false);
        const trash = (await unlessMissing(app.driver.listNames(layout.GC_TRASH))) ?? [];
        assert.deepEqual(trash.sort(), orphan.blobs.map((b) => b.digest.slice('sha512:'.length)).sort());
        assert.equal(await servedWhole(url, 'sha/kept', kept), undefined);
        const [rescued, ...rest] = orphan.blobs;
        assert.equal((await fetch(`${url}/v2/sha/orphan/blobs/${rescued.digest}`, { method: 'HEAD' })).status, 200, 'taken back from the trash');
        assert.ok(await stored(app.driver, rescued.digest));
        await age(AGED_MS);
        const second = await collectOnline(app.driver, { delayMs: DELAY_MS, dryRun: false });
        assert.equal(second.blobsPurged, rest.length);
        assert.equal(second.bytesFreed, rest.reduce((n, b) => n + b.size, 0));
        assert.equal(await servedWhole(url, 'sha/kept', kept), undefined);
      });
    });

    it('a blob in the trash is taken back by the next request that relies on it (HEAD, then a manifest that references it)', async () => {
      await withBerth(async ({ url, app, age }) => {
        const image = buildImage('docker-v2');
        await pushBlobsOnly(url, 'team/late', image);
        await age(AGED_MS);
        assert.equal((await collectOnline(app.driver, { delayMs: DELAY_MS, dryRun: false })).blobsTrashed, image.blobs.length);
        for (const blob of image.blobs) {
          const head = await fetch(`${url}/v2/team/late/blobs/${blob.digest}`, { method: 'HEAD' });
          assert.equal(head.status, 200, 'rescued from the trash');
        }
        const put = await putManifest(url, 'team/late', 'v1', image.body, image.mediaType);
        assert.equal(put.status, 201);
        assert.equal(await servedWhole(url, 'team/late', image), undefined);
        await age(AGED_MS);
        const next = await collectOnline(app.driver, { delayMs: DELAY_MS, dryRun: false });
        assert.equal(next.blobsPurged, 0);
        assert.equal(await servedWhole(url, 'team/late', image), undefined);
      });
    });

    it('a use recorded while the collector moves a blob to the trash brings it back (the protocol, interleaved by hand)', async () => {
      await withBerth(async ({ url, app, age }) => {
        const image = buildImage('docker-v2');
        await pushBlobsOnly(url, 'team/race', image);
        await age(AGED_MS);
        const writer = new TouchingGuard(app.driver, 0);
        // a request records its use right after the collector's move, before the collector reads the record again
        const interleaving = new (class extends ForwardingDriver {
          override async move(src: string, dst: string): Promise<void> {
            await super.move(src, dst);
            const hex = dst.match(/\/trash\/([0-9a-f]{64})\/data$/)?.[1];
            if (hex) await writer.touch([`sha256:${hex}`]);
          }
        })(app.driver);
        const summary = await collectOnline(interleaving, { delayMs: DELAY_MS, dryRun: false });
        assert.equal(summary.blobsTrashed, 0);
        assert.equal(summary.blobsRestored, image.blobs.length);
        for (const blob of image.blobs) assert.ok(await stored(app.driver, blob.digest));
        assert.equal((await putManifest(url, 'team/race', 'v1', image.body, image.mediaType)).status, 201);
        assert.equal(await servedWhole(url, 'team/race', image), undefined);
      });
    });

    it('uploads in progress are untouched', async () => {
      await withBerth(async ({ url, app, age }) => {
        const started = await fetch(`${url}/v2/team/slow/blobs/uploads/`, { method: 'POST' });
        const location = new URL(started.headers.get('location')!, url);
        const part = Buffer.alloc(4096, 3);
        const patched = await fetch(location, { method: 'PATCH', headers: { 'content-type': 'application/octet-stream' }, body: part });
        assert.equal(patched.status, 202);
        await age(AGED_MS);
        await collectOnline(app.driver, { delayMs: DELAY_MS, dryRun: false });
        const rest = Buffer.alloc(100, 4);
        const put = new URL(patched.headers.get('location')!, url);
        put.searchParams.set('digest', sha(Buffer.concat([part, rest]), 'sha256:'));
        assert.equal((await fetch(put, { method: 'PUT', headers: { 'content-type': 'application/octet-stream' }, body: rest })).status, 201);
      });
    });

    it('one collector at a time: of two instances ticking together one collects, the other skips', async () => {
      await withBerth(async ({ app }) => {
        const logger = pino({ level: 'silent' });
        const settings = { interval: 60_000, delay: DELAY_MS, dryrun: true, deleteuntagged: false };
        const runs: string[] = [];
        let now = Date.now();
        // the claim's settle wait on the real clock; "now" moved by the test
        const clock = { now: () => now, after: systemClock.after };
        const signal = new AbortController().signal;
        const tasks = [0, 1].map((i) => collectionTask(app.driver, settings, clock, logger, () => runs.push(`instance ${i}`), 300));
        await Promise.all(tasks.map((task) => task.run(signal)));
        assert.equal(runs.length, 1, runs.join());
        // within the interval neither collects again; an interval later, the next tick of either does
        await tasks[1].run(signal);
        assert.equal(runs.length, 1);
        now += settings.interval;
        await tasks[1].run(signal);
        assert.equal(runs.length, 2);
        // a holder that died mid-pass: its hold keeps the others off until it expires, then the pass is taken over
        now += settings.interval;
        const state = layout.scheduleState('gc');
        await app.driver.putContent(state, Buffer.from(JSON.stringify({ started: now - settings.interval, instance: 'dead', heldUntil: now + HOLD_MS / 2 })));
        await tasks[0].run(signal);
        assert.equal(runs.length, 2, 'held and not expired');
        now += HOLD_MS;
        await tasks[0].run(signal);
        assert.equal(runs.length, 3, 'expired: taken over');
        assert.equal((JSON.parse((await app.driver.getContent(state)).toString()) as { heldUntil?: number }).heldUntil, undefined, 'released when done');
      });
    });

    it('the race: collections against pushes that reuse old unreferenced blobs, mounts and deletes lose nothing acknowledged', async () => {
      await withBerth(async ({ url, app, age }) => {
        const rounds = driver === 's3' ? 4 : 10;
        const acknowledged = new Map<string, { name: string; image: Image }>();
        const deleted = new Set<string>();
        let operations = 0;
        let refused = 0;
        let collected = 0;
        for (let round = 0; round < rounds; round++) {
          const images = Array.from({ length: 6 }, () => buildImage('docker-v2', { layers: 2, layerSize: 512 }));
          for (const [i, image] of images.entries()) await pushBlobsOnly(url, `old/r${round}i${i}`, image);
          await age(AGED_MS); // every blob of the round is now old and unreferenced
          const collector = (async () => {
            for (let i = 0; i < 2; i++) {
              const s = await collectOnline(app.driver, { delayMs: DELAY_MS, dryRun: false });
              collected += s.blobsTrashed + s.blobsPurged;
            }
          })();
          const pushers = images.map(async (image, i) => {
            await sleep(i * 15);
            const from = `old/r${round}i${i}`;
            let name = from;
            if (i % 3 === 1) {
              // a mount into another repository, then the manifest there
              name = `new/r${round}i${i}`;
              for (const blob of image.blobs) {
                operations++;
                await fetch(`${url}/v2/${name}/blobs/uploads/?mount=${blob.digest}&from=${from}`, { method: 'POST' });
              }
            } else if (i % 3 === 2) {
              return; // left unreferenced: the collections may take it
            } else {
              for (const blob of image.blobs) {
                operations++;
                await fetch(`${url}/v2/${name}/blobs/${blob.digest}`, { method: 'HEAD' });
              }
            }
            operations++;
            const res = await putManifest(url, name, `t${round}`, image.body, image.mediaType);
            if (res.status === 201) acknowledged.set(`${name}@${image.digest}`, { name, image });
            else refused++; // a safe answer (BLOB_UNKNOWN): the client uploads again
          });
          // a delete of an image acknowledged in an earlier round
          const earlier = [...acknowledged.keys()].find((key) => !deleted.has(key));
          if (earlier) {
            const { name, image } = acknowledged.get(earlier)!;
            operations++;
            if ((await fetch(`${url}/v2/${name}/manifests/${image.digest}`, { method: 'DELETE' })).status === 202) deleted.add(earlier);
          }
          await Promise.all([collector, ...pushers]);
          for (const [key, { name, image }] of acknowledged) {
            if (deleted.has(key)) continue;
            // under blobs/ (not waiting in the trash for a read to take it back), then served whole
            for (const blob of image.blobs) assert.ok(await stored(app.driver, blob.digest), `round ${round}: ${name} ${blob.digest} is in the trash`);
            assert.equal(await servedWhole(url, name, image), undefined, `round ${round}`);
          }
        }
        const kept = [...acknowledged.keys()].filter((key) => !deleted.has(key)).length;
        console.log(`# race (${driver}): ${rounds} rounds, ${operations} operations, ${acknowledged.size} manifests acknowledged, ${deleted.size} deleted, ${kept} checked whole after every round, ${refused} refused safely, ${collected} blobs collected; nothing lost`);
        assert.ok(collected > 0, 'the collections did collect the unreferenced blobs');
        assert.ok(acknowledged.size >= rounds * 3, 'most pushes were acknowledged');
      });
    });
  });
}

describe('online garbage collection in a running registry', () => {
  it('runs on its interval and reports its last figures in /debug/vars and Prometheus', async () => {
    let store: AgingStore | undefined;
    const berth = await startBerth(
      {
        storage: { maintenance: { gc: { enabled: true, interval: '300ms', delay: '1s' } } },
        http: { debug: { addr: '127.0.0.1:0', prometheus: { enabled: true } } },
      },
      { wrapDriver: (inner) => (store = new AgingStore(inner)) },
    );
    try {
      const orphan = buildImage('docker-v2');
      await pushBlobsOnly(berth.url, 'app/orphan', orphan);
      store!.age(1300); // older than the delay, on the store's clock the collection reads
      // a run every 300 ms: on a loaded machine one may pass while the blobs are still being
      // pushed (real time), and trash the first ones alone; each run reports what it trashed
      const deadline = Date.now() + 20_000;
      let gc: Record<string, number> = {};
      const trashed = new Map<number, number>();
      while (Date.now() < deadline) {
        gc = ((await (await fetch(`${berth.app.debugURL}/debug/vars`)).json()) as { gc: Record<string, number> }).gc;
        if (gc.lastBlobsTrashed > 0) trashed.set(gc.runs, gc.lastBlobsTrashed);
        if ([...trashed.values()].reduce((a, b) => a + b, 0) >= orphan.blobs.length) break;
        await sleep(50);
      }
      assert.ok(gc.runs >= 1, JSON.stringify(gc));
      assert.ok(trashed.size > 0, `a run reported the blobs it trashed: ${JSON.stringify(gc)}`);
      for (const blob of orphan.blobs) assert.equal(await stored(berth.app.driver, blob.digest), false, `${blob.digest} is in the trash`);
      assert.equal(typeof gc.lastDurationSeconds, 'number');
      const metrics = await (await fetch(`${berth.app.debugURL}/metrics`)).text();
      assert.match(metrics, /^berth_gc_runs \d+$/m);
      assert.match(metrics, /^berth_gc_last_bytes_freed \d+$/m);
      assert.match(metrics, /^berth_gc_last_duration_seconds [\d.e-]+$/m);
    } finally {
      await berth.stop();
    }
  });

  it('takes deleteuntagged (false by default)', async () => {
    const { validateConfig } = await import('../../src/config/load.js');
    const gc = (extra: object) => validateConfig({ version: '0.1', storage: { inmemory: {}, maintenance: { gc: { enabled: true, ...extra } } } }, 't').storage.maintenance.gc;
    assert.equal(gc({}).deleteuntagged, false);
    assert.equal(gc({ deleteuntagged: true }).deleteuntagged, true);
    assert.throws(() => gc({ deleteuntagged: 'sometimes' }), /storage\.maintenance\.gc\.deleteuntagged/);
  });
});
