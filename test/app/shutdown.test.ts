/** Shutdown: requests in flight finish, keep-alive connections do not hold the process. */
import assert from 'node:assert/strict';
import { Agent, request } from 'node:http';
import { describe, it } from 'node:test';
import { startBerth } from '../helpers/berth.js';
import { pushBlob, randomBlob } from '../helpers/blobs.js';
import { startBerthProcess } from '../helpers/berth-process.js';
import { startReceiver } from '../helpers/receiver.js';

describe('shutdown', () => {
  it('does not wait for a keep-alive connection whose response just finished', async () => {
    const registry = await startBerth();
    const blob = randomBlob(4 << 20);
    assert.equal((await pushBlob(registry.url, 'a/b', blob.data)).status, 201);
    const agent = new Agent({ keepAlive: true, timeout: 30_000 });
    try {
      await new Promise<void>((done, fail) =>
        request(`${registry.url}/v2/a/b/blobs/${blob.digest}`, { agent }, (res) => {
          res.resume();
          res.on('end', done);
        })
          .on('error', fail)
          .end(),
      );
      const started = Date.now();
      await registry.stop();
      // without the idle sweep this waited for the client's 30 s keep-alive; with it, a sweep interval
      assert.ok(Date.now() - started < 5_000, `stop took ${Date.now() - started} ms`);
    } finally {
      agent.destroy();
    }
  });

  it('cuts connections still busy after the grace period', async () => {
    const registry = await startBerth();
    const location = (await fetch(`${registry.url}/v2/slow/blobs/uploads/`, { method: 'POST' })).headers.get('location')!;
    // a PATCH that never finishes sending
    const url = new URL(location);
    const req = request({ host: url.hostname, port: url.port, path: url.pathname + url.search, method: 'PATCH', headers: { 'content-length': '1000000' } });
    req.on('error', () => undefined);
    req.write(Buffer.alloc(1000));
    await new Promise((r) => setTimeout(r, 100));
    const started = Date.now();
    await registry.app.close(300);
    assert.ok(Date.now() - started < 3_000, `close took ${Date.now() - started} ms`);
    req.destroy();
    await registry.stop();
  });
});

describe('shutdown with notification endpoints', () => {
  it('SIGTERM: requests stop, then queued events are delivered within http.draintimeout', async () => {
    // every delivery takes 300 ms: the events are still queued or in flight when SIGTERM arrives
    const rx = await startReceiver(() => ({ delayMs: 300 }));
    const child = await startBerthProcess({
      config: {
        log: { level: 'info' },
        http: { draintimeout: '5s' },
        notifications: { endpoints: [{ name: 'slow-hook', url: `${rx.url}/hook`, timeout: '2s', headers: { Authorization: ['Bearer hidden-token'] } }] },
      },
    });
    try {
      const blobs = [randomBlob(64), randomBlob(64)];
      for (const blob of blobs) assert.equal((await pushBlob(child.url, 'drain/repo', blob.data)).status, 201);
      const exit = await child.stop();
      assert.equal(exit.code, 0, child.logs());
      const delivered = rx.delivered().map((e) => (e as { target: { digest: string } }).target.digest);
      assert.deepEqual(delivered.sort(), blobs.map((b) => b.digest).sort(), 'both events delivered before exit');
      const logs = child.logs();
      assert.match(logs, /configured notification endpoint slow-hook/);
      assert.ok(!logs.includes('hidden-token'), 'header values are masked in the logs');
    } finally {
      await child.stop();
      await rx.close();
    }
  });
});
