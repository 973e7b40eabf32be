/** Shutdown: requests in flight finish, keep-alive connections do not hold the process. */
import assert from 'node:assert/strict';
import { Agent, request } from 'node:http';
import { describe, it } from 'node:test';
import { startBerth } from '../helpers/berth.js';
import { pushBlob, randomBlob } from '../helpers/blobs.js';

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
