/**
 * The debug listener's equivalent of Distribution's /debug/pprof: a CPU profile of N seconds and a
 * heap snapshot on demand (node:inspector / V8), and nothing of it on the registry's own port.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startBerth, type TestRegistry } from '../helpers/berth.js';

describe('/debug/pprof on the debug listener', () => {
  let registry: TestRegistry;
  let debug: string;
  before(async () => {
    registry = await startBerth({ http: { debug: { addr: '127.0.0.1:0' } } }, { driver: 'inmemory' });
    assert.ok(registry.app.debugURL);
    debug = registry.app.debugURL;
  });
  after(() => registry?.stop());

  it('profile?seconds=0.2: a .cpuprofile of about that long', async () => {
    const res = await fetch(`${debug}/debug/pprof/profile?seconds=0.2`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-disposition') ?? '', /attachment; filename="berth-\d+-\d+\.cpuprofile"/);
    const profile = (await res.json()) as { nodes: { callFrame: { functionName: string } }[]; startTime: number; endTime: number; samples: number[] };
    assert.ok(Array.isArray(profile.nodes) && profile.nodes.length > 0);
    assert.ok(profile.nodes.some((n) => n.callFrame.functionName === '(root)'));
    const micros = profile.endTime - profile.startTime;
    assert.ok(micros >= 150_000 && micros < 2_000_000, `${micros} µs`);
  });

  it('one CPU profile at a time: another answers 409 while it runs', async () => {
    const first = fetch(`${debug}/debug/pprof/profile?seconds=0.3`);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const second = await fetch(`${debug}/debug/pprof/profile?seconds=0.1`);
    assert.equal(second.status, 409);
    assert.match(((await second.json()) as { error: string }).error, /already being taken/);
    assert.equal((await first).status, 200);
    await (await first).arrayBuffer();
  });

  it('refuses a duration that is not a number of seconds from above 0 to 300', async () => {
    for (const seconds of ['0', '-1', 'soon', '301']) {
      const res = await fetch(`${debug}/debug/pprof/profile?seconds=${seconds}`);
      assert.equal(res.status, 400, seconds);
      assert.match(((await res.json()) as { error: string }).error, /seconds must be/);
    }
  });

  it('heap: a V8 heap snapshot, streamed', async () => {
    const res = await fetch(`${debug}/debug/pprof/heap`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-disposition') ?? '', /\.heapsnapshot"/);
    const reader = res.body!.getReader();
    let head = '';
    while (head.length < 40) {
      const { value, done } = await reader.read();
      if (done) break;
      head += Buffer.from(value).toString();
    }
    await reader.cancel();
    assert.match(head, /^\{"snapshot":\{"meta":/);
  });

  it('lists the profiles at /debug/pprof/', async () => {
    const res = await fetch(`${debug}/debug/pprof/`);
    assert.equal(res.status, 200);
    const text = await res.text();
    assert.match(text, /\/debug\/pprof\/profile\?seconds=N/);
    assert.match(text, /\/debug\/pprof\/heap/);
  });

  it('is not on the registry port', async () => {
    for (const path of ['/debug/pprof/heap', '/debug/pprof/profile?seconds=0.1']) {
      const res = await fetch(`${registry.url}${path}`);
      assert.equal(res.status, 404, path);
      await res.arrayBuffer();
    }
  });
});
