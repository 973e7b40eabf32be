/**
 * "Streams end to end: a 1 GiB upload raises the server's RSS by well under 100 MiB" (now 24: see LIMIT).
 *
 * berth runs as a child process so its memory can be read from /proc/<pid>/status: VmRSS before a
 * transfer is the baseline, VmHWM (the peak, reset to the current RSS before each transfer) after
 * it is the peak. Memory is asserted, never time; throughput is printed for the record.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { MiB, PatternBlob, startBerthProcess, streamDownload, streamRequest, type BerthProcess } from '../helpers/berth-process.js';

/**
 * 100 MiB was the promise of the first issue; 24 since request-body buffers are collected every
 * few MiB (src/runtime/gc-pacing.ts): before, a 1 GiB upload added 36 MiB, after 5-11 (V8 freed the
 * body's Buffers only once 64 MiB of them had piled up)
 */
const LIMIT = 24 * MiB;
const mib = (bytes: number) => (bytes / MiB).toFixed(1);
const rate = (bytes: number, ms: number) => ((bytes / MiB) / (ms / 1000)).toFixed(0);

describe('streaming keeps server memory flat (child process)', () => {
  let berth: BerthProcess;
  /** RSS after a warm-up push and pull: code loaded, buffers allocated */
  let baseline: number;

  before(async () => {
    berth = await startBerthProcess();
    const warm = new PatternBlob(8 * MiB);
    const res = await streamRequest(`${berth.url}/v2/mem/warmup/blobs/uploads/?digest=${warm.digest()}`, {
      method: 'POST',
      headers: { 'content-length': warm.size },
      body: warm.chunks(),
    });
    assert.equal(res.status, 201, res.body);
    const back = await streamDownload(`${berth.url}/v2/mem/warmup/blobs/${warm.digest()}`);
    assert.equal(back.digest, warm.digest());
    baseline = berth.memory().rss;
    console.log(`[memory] server RSS baseline after warm-up: ${mib(baseline)} MiB`);
  });
  after(async () => {
    await berth?.stop();
  });

  /** runs `work` and returns the server's RSS before it and its peak during it */
  async function measure(label: string, work: () => Promise<void>): Promise<{ before: number; peak: number }> {
    const before = berth.memory().rss;
    assert.ok(berth.resetPeak(), 'cannot reset VmHWM through /proc/<pid>/clear_refs');
    await work();
    const { hwm: peak, rss: afterRss } = berth.memory();
    console.log(
      `[memory] ${label}: RSS before ${mib(before)} MiB, peak ${mib(peak)} MiB (+${mib(peak - before)} MiB; +${mib(peak - baseline)} MiB over the baseline), after ${mib(afterRss)} MiB`,
    );
    return { before, peak };
  }

  it('1 GiB in one chunked PATCH, PUT ?digest=, GET back: peak RSS stays < baseline + 24 MiB both ways', { timeout: 120_000 }, async () => {
    const blob = new PatternBlob(1024 * MiB);
    const start = await fetch(`${berth.url}/v2/mem/big/blobs/uploads/`, { method: 'POST' });
    assert.equal(start.status, 202);
    let location = new URL(start.headers.get('location')!, berth.url);
    let digest = '';

    const up = await measure('1 GiB PATCH + PUT', async () => {
      // no Content-Length: chunked, generated on the fly and hashed as it goes out
      const patch = await streamRequest(location, { method: 'PATCH', body: blob.chunks() });
      assert.equal(patch.status, 202, patch.body);
      assert.equal(patch.sent, blob.size);
      assert.equal(patch.headers.range, `0-${blob.size - 1}`);
      console.log(`[throughput] 1 GiB PATCH: ${(patch.ms / 1000).toFixed(1)} s, ${rate(blob.size, patch.ms)} MiB/s`);
      digest = patch.sentDigest;
      location = new URL(patch.headers.location!, berth.url);
      location.searchParams.set('digest', digest);
      const put = await streamRequest(location, { method: 'PUT' });
      assert.equal(put.status, 201, put.body);
      assert.equal(put.headers['registry-content-digest'], digest);
    });
    assert.ok(up.peak - up.before < LIMIT, `upload raised RSS by ${mib(up.peak - up.before)} MiB`);

    const down = await measure('1 GiB GET', async () => {
      const got = await streamDownload(`${berth.url}/v2/mem/big/blobs/${digest}`);
      assert.equal(got.status, 200);
      assert.equal(got.size, blob.size);
      assert.equal(got.digest, digest);
      console.log(`[throughput] 1 GiB GET: ${(got.ms / 1000).toFixed(1)} s, ${rate(blob.size, got.ms)} MiB/s`);
    });
    assert.ok(down.peak - down.before < LIMIT, `download raised RSS by ${mib(down.peak - down.before)} MiB`);
    // and nothing accumulated across both: still well under baseline + LIMIT
    assert.ok(down.peak - baseline < LIMIT, `peak ${mib(down.peak)} MiB is ${mib(down.peak - baseline)} MiB over the baseline`);
  });

  it('256 MiB monolithic POST ?digest= (Content-Length, streamed): peak RSS stays < baseline + 24 MiB', { timeout: 60_000 }, async () => {
    const blob = new PatternBlob(256 * MiB);
    const digest = blob.digest();
    const up = await measure('256 MiB monolithic POST', async () => {
      const res = await streamRequest(`${berth.url}/v2/mem/mono/blobs/uploads/?digest=${digest}`, {
        method: 'POST',
        headers: { 'content-length': blob.size },
        body: blob.chunks(),
      });
      assert.equal(res.status, 201, res.body);
      assert.equal(res.sentDigest, digest);
      console.log(`[throughput] 256 MiB monolithic POST: ${(res.ms / 1000).toFixed(1)} s, ${rate(blob.size, res.ms)} MiB/s`);
    });
    assert.ok(up.peak - up.before < LIMIT, `monolithic upload raised RSS by ${mib(up.peak - up.before)} MiB`);
    assert.ok(up.peak - baseline < LIMIT, `peak ${mib(up.peak)} MiB is ${mib(up.peak - baseline)} MiB over the baseline`);

    const got = await streamDownload(`${berth.url}/v2/mem/mono/blobs/${digest}`);
    assert.equal(got.status, 200);
    assert.equal(got.digest, digest);
  });
});
