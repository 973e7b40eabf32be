/**
 * The debug listener (http.debug.addr): /debug/vars against what a real endpoint received,
 * /debug/health against a storage driver that fails, /metrics with prometheus enabled.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { createApp, type App } from '../../src/app.js';
import { validateConfig } from '../../src/config/load.js';
import { InMemoryDriver } from '../../src/storage/inmemory.js';
import type { StorageDriver } from '../../src/storage/driver.js';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { pushBlob, randomBlob } from '../helpers/blobs.js';
import { buildImage, pushImageOK } from '../helpers/images.js';
import { eventually, startReceiver, type Receiver } from '../helpers/receiver.js';

type Json = Record<string, any>;

async function getJSON(url: string): Promise<{ status: number; body: Json }> {
  const res = await fetch(url);
  return { status: res.status, body: (await res.json()) as Json };
}

describe('/debug/vars', () => {
  let rx: Receiver;
  let registry: TestRegistry;
  before(async () => {
    // the first two deliveries fail with 500, then everything is accepted
    rx = await startReceiver((n) => ({ status: n < 2 ? 500 : 202 }));
    registry = await startBerth({
      http: { draintimeout: '1s', debug: { addr: '127.0.0.1:0' } },
      notifications: {
        endpoints: [
          { name: 'listener', url: `${rx.url}/hook`, headers: { Authorization: ['Bearer x'] }, timeout: '750ms', threshold: 1, backoff: '25ms' },
          { name: 'quiet', url: `${rx.url}/quiet`, ignore: { actions: ['push', 'pull', 'mount', 'delete'] } },
        ],
      },
    });
  });
  after(async () => {
    await registry?.stop();
    await rx?.close();
  });

  it('reports each endpoint with the numbers the listener saw', async () => {
    assert.ok(registry.app.debugURL, 'the debug listener is up');
    await pushBlob(registry.url, 'vars/repo', randomBlob(100).data);
    await pushBlob(registry.url, 'vars/repo', randomBlob(100).data);
    await eventually(() => rx.delivered().length === 2, 5000, 'two delivered events');
    await eventually(() => registry.app.notifier.snapshot()[0].Metrics.Pending === 0, 2000, 'an empty queue');

    const { status, body } = await getJSON(`${registry.app.debugURL}/debug/vars`);
    assert.equal(status, 200);
    assert.deepEqual(body.registry.notifications, body.notifications, 'mirrored under registry.notifications');
    const [listener, quiet] = body.notifications.endpoints;
    assert.equal(listener.name, 'listener');
    assert.equal(listener.url, `${rx.url}/hook`);
    assert.deepEqual(listener.Headers, { Authorization: ['********'] });
    assert.equal(listener.Timeout, 750_000_000);
    assert.equal(listener.Backoff, 25_000_000);
    assert.equal(listener.Threshold, 1);
    const m = listener.Metrics;
    const answered = (status: number) => rx.requests.filter((r) => r.path === '/hook' && r.status === status).flatMap((r) => JSON.parse(r.body).events).length;
    assert.equal(m.Events, 2);
    assert.equal(m.Pending, 0);
    assert.equal(m.Successes, answered(202));
    assert.equal(m.Successes, 2);
    assert.equal(m.Failures, answered(500));
    assert.equal(m.Errors, 0);
    assert.deepEqual(m.Statuses, { '500 Internal Server Error': answered(500), '202 Accepted': answered(202) });

    assert.equal(quiet.Headers, null);
    assert.equal(quiet.Timeout, 1_000_000_000, 'default timeout 1s');
    assert.equal(quiet.Backoff, 1_000_000_000, 'default backoff 1s');
    assert.equal(quiet.Threshold, 10, 'default threshold');
    assert.deepEqual(quiet.Metrics, { Pending: 0, Events: 0, Successes: 0, Failures: 0, Errors: 0, Statuses: {}, Dropped: 0 });

    assert.ok(Array.isArray(body.cmdline));
    assert.equal(typeof body.uptime, 'number');
    assert.ok(body.memstats.rss > 0);
  });

  it('answers 404 for other pages, and /metrics is off unless prometheus is enabled', async () => {
    assert.equal((await fetch(`${registry.app.debugURL}/metrics`)).status, 404);
    assert.equal((await fetch(`${registry.app.debugURL}/nothing`)).status, 404);
    assert.equal((await fetch(`${registry.app.debugURL}/debug/vars`, { method: 'POST' })).status, 405);
  });
});

/** an in-memory driver whose stat fails while `broken` is set */
class BreakableDriver extends InMemoryDriver {
  broken = false;
  override async stat(path: string) {
    if (this.broken) throw new Error('storage is on fire');
    return super.stat(path);
  }
}

describe('/debug/health', () => {
  it('is 200 while the storage driver answers, 503 naming the failing check when it does not', async () => {
    const driver = new BreakableDriver();
    const app = await listening({ http: { addr: '127.0.0.1:0', debug: { addr: '127.0.0.1:0' } } }, driver);
    try {
      const ok = await getJSON(`${app.debugURL}/debug/health`);
      assert.equal(ok.status, 200);
      assert.deepEqual(ok.body, {});
      driver.broken = true;
      const failing = await getJSON(`${app.debugURL}/debug/health`);
      assert.equal(failing.status, 503);
      assert.deepEqual(failing.body, { storagedriver_inmemory: 'storage is on fire' });
      driver.broken = false;
      assert.equal((await fetch(`${app.debugURL}/debug/health`)).status, 200);
    } finally {
      await app.close(500);
    }
  });
});

async function listening(overrides: Json, driver?: StorageDriver): Promise<App> {
  const config = validateConfig({ version: '0.1', storage: { inmemory: {}, delete: { enabled: true } }, log: { accesslog: { disabled: true } }, ...overrides }, 'test');
  const app = await createApp(config, { logger: pino({ level: 'silent' }), driver });
  await app.listen({ host: '127.0.0.1', port: 0 });
  return app;
}

describe('/metrics (http.debug.prometheus)', () => {
  it('exposes request counts and latencies, bytes, storage timings and notification counters', async () => {
    const rx = await startReceiver();
    const registry = await startBerth(
      {
        http: { draintimeout: '1s', debug: { addr: '127.0.0.1:0', prometheus: { enabled: true, path: '/metrics' } } },
        notifications: { endpoints: [{ name: 'prom', url: rx.url }] },
      },
      { driver: 'inmemory' },
    );
    try {
      const image = await pushImageOK(registry.url, 'prom/repo', buildImage('docker-v2', { layers: 1, layerSize: 128 }), 'latest');
      await (await fetch(`${registry.url}/v2/prom/repo/manifests/latest`)).arrayBuffer();
      assert.equal((await fetch(`${registry.url}/v2/prom/repo/manifests/missing`)).status, 404);
      await eventually(() => registry.app.notifier.snapshot()[0].Metrics.Successes === rx.delivered().length && rx.delivered().length >= 4, 5000, 'events delivered');

      const res = await fetch(`${registry.app.debugURL}/metrics`);
      assert.equal(res.status, 200);
      assert.match(res.headers.get('content-type') ?? '', /^text\/plain/);
      const text = await res.text();
      const value = (pattern: RegExp) => {
        const line = text.split('\n').find((l) => pattern.test(l));
        assert.ok(line, `a line matching ${pattern}`);
        return Number(line.split(' ').pop());
      };
      assert.equal(value(/^berth_http_requests_total\{method="PUT",route="manifest",code="201"\}/), 1);
      assert.equal(value(/^berth_http_requests_total\{method="GET",route="manifest",code="200"\}/), 1);
      assert.equal(value(/^berth_http_requests_total\{method="GET",route="manifest",code="404"\}/), 1);
      assert.ok(value(/^berth_http_request_duration_seconds_count\{method="PUT",route="upload",code="201"\}/) >= 2);
      assert.ok(value(/^berth_http_in_bytes_total\{method="PUT",route="manifest"\}/) >= image.body.length);
      assert.ok(value(/^berth_http_out_bytes_total\{method="GET",route="manifest"\}/) >= image.body.length);
      assert.ok(value(/^berth_storage_operation_duration_seconds_count\{driver="inmemory",operation="putcontent",outcome="ok"\}/) >= 1);
      const delivered = rx.delivered().length;
      assert.equal(value(/^berth_notifications_events_total\{endpoint="prom"\}/), delivered);
      assert.equal(value(/^berth_notifications_successes_total\{endpoint="prom"\}/), delivered);
      assert.equal(value(/^berth_notifications_failures_total\{endpoint="prom"\}/), 0);
      assert.equal(value(/^berth_notifications_pending\{endpoint="prom"\}/), 0);
      assert.equal(value(/^berth_notifications_statuses_total\{endpoint="prom",status="200 OK"\}/), delivered);
      assert.match(text, /^berth_process_resident_memory_bytes /m);
    } finally {
      await registry.stop();
      await rx.close();
    }
  });
});
