/**
 * Issue 18, "Memory of stalled downloads": 300 clients start a blob GET and stop reading. The
 * kernel's socket buffers fill (they are not the server's RSS); what the registry keeps for each
 * response in its own memory must stay small, other clients must be served meanwhile, and RSS
 * must not grow further once the stalled clients close (what is freed is reused). Distribution
 * buffers about 32 KiB per connection; before the fix berth held two 1 MiB read buffers per
 * response (RSS 100 -> 468 MiB, 703 MiB after the clients closed).
 *
 * berth runs as a child process so its RSS can be read from /proc/<pid>/status. Memory is
 * asserted, never time.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { MiB, PatternBlob, startBerthProcess, streamDownload, streamRequest, type BerthProcess } from '../helpers/berth-process.js';

const STALLED = 300;
/**
 * what 300 stalled responses may add to the server's RSS: their own read buffers (2 x 16 KiB
 * each, 9.4 MiB), the shared large buffers they can pin (16 MiB), the objects of 300 connections
 * (about 4 MiB) and the young generation V8 grows under load (2 x 4 MiB once serving: see
 * src/runtime/startup-heap.ts; 2 x 16 MiB before). Measured: +28 to +46 MiB; before the fix +590.
 */
const GROWTH_LIMIT = 64 * MiB;
const mib = (bytes: number) => (bytes / MiB).toFixed(1);

/** samples RSS every 250 ms until it moved less than 1 MiB over a second (or `maxMs` passed) */
async function steadyRss(berth: BerthProcess, maxMs = 30_000): Promise<number> {
  const samples: number[] = [];
  const started = Date.now();
  for (;;) {
    samples.push(berth.memory().rss);
    const last = samples.slice(-5);
    if ((last.length === 5 && Math.max(...last) - Math.min(...last) < MiB) || Date.now() - started > maxMs) return last[last.length - 1];
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/**
 * a GET of `path` on a raw connection that reads the response head and the first body bytes,
 * then stops reading (the socket is paused: the kernel's receive buffer fills, then the server's)
 */
function stalledGet(port: number, path: string): Promise<{ socket: Socket; first: Buffer }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('error', reject);
    socket.once('data', (first: Buffer) => {
      socket.pause();
      const head = first.toString('latin1');
      if (!head.startsWith('HTTP/1.1 200')) reject(new Error(`stalled GET answered ${JSON.stringify(head.slice(0, 200))}`));
      else resolve({ socket, first });
    });
    // the server closes the connection after the response: the client's 'end' is the body's end
    socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`);
  });
}

describe('stalled downloads do not pile up in server memory (child process)', () => {
  let berth: BerthProcess;
  const blob = new PatternBlob(8 * MiB);
  let path: string;
  const sockets: Socket[] = [];

  before(async () => {
    berth = await startBerthProcess();
    path = `/v2/stall/blob/blobs/${blob.digest()}`;
    const res = await streamRequest(`${berth.url}/v2/stall/blob/blobs/uploads/?digest=${blob.digest()}`, {
      method: 'POST',
      headers: { 'content-length': blob.size },
      body: blob.chunks(),
    });
    assert.equal(res.status, 201, res.body);
    // warm up: the code of the GET path loaded, its buffers allocated once
    for (let i = 0; i < 3; i++) assert.equal((await streamDownload(`${berth.url}${path}`)).digest, blob.digest());
  });
  after(async () => {
    for (const s of sockets) s.destroy();
    await berth?.stop();
  });

  it(`${STALLED} clients that stop reading an 8 MiB blob add at most ${mib(GROWTH_LIMIT)} MiB, others are served, RSS does not grow after they close`, { timeout: 180_000 }, async () => {
    const port = Number(new URL(berth.url).port);
    const baseline = await steadyRss(berth);
    assert.ok(berth.resetPeak(), 'cannot reset VmHWM through /proc/<pid>/clear_refs');

    // the first one reads on later: what it gets must be the blob (no buffer was reused too early)
    const resumed = await stalledGet(port, path);
    sockets.push(resumed.socket);
    for (let i = 1; i < STALLED; i += 50) {
      const batch = await Promise.all(Array.from({ length: Math.min(50, STALLED - i) }, () => stalledGet(port, path)));
      sockets.push(...batch.map((s) => s.socket));
    }
    const stalled = await steadyRss(berth);

    // the registry still serves others: the whole blob to a reading client, and the base route
    const whole = await streamDownload(`${berth.url}${path}`, 'GET', 60_000);
    assert.equal(whole.status, 200);
    assert.equal(whole.digest, blob.digest());
    assert.equal((await fetch(`${berth.url}/v2/`)).status, 200);

    const { hwm: peak } = berth.memory();
    console.log(`[memory] RSS baseline ${mib(baseline)} MiB; with ${STALLED} stalled downloads ${mib(stalled)} MiB (+${mib(stalled - baseline)}), peak ${mib(peak)} MiB (+${mib(peak - baseline)})`);
    assert.ok(peak - baseline < GROWTH_LIMIT, `${STALLED} stalled downloads raised RSS by ${mib(peak - baseline)} MiB (limit ${mib(GROWTH_LIMIT)})`);

    const received = [resumed.first];
    const ended = new Promise<void>((resolve, reject) => {
      resumed.socket.on('data', (chunk: Buffer) => received.push(chunk)).on('end', resolve).on('error', reject);
    });
    resumed.socket.resume();
    await ended;
    const response = Buffer.concat(received);
    const body = response.subarray(response.indexOf('\r\n\r\n') + 4);
    assert.equal(body.length, blob.size);
    assert.equal(`sha256:${createHash('sha256').update(body).digest('hex')}`, blob.digest(), 'the stalled download that read on got other bytes than the blob');

    for (const s of sockets.splice(0)) s.destroy();
    // the responses end, their buffers are freed and reused: RSS does not grow (it went on to 703 MiB before)
    const closed = await steadyRss(berth);
    console.log(`[memory] after the stalled clients closed: ${mib(closed)} MiB (+${mib(closed - baseline)})`);
    assert.ok(closed - baseline < GROWTH_LIMIT, `after the stalled clients closed RSS is ${mib(closed - baseline)} MiB over the baseline`);
    const again = await streamDownload(`${berth.url}${path}`);
    assert.equal(again.digest, blob.digest());
  });
});
