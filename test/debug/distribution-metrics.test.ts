/**
 * /metrics also serves Distribution's families (names, labels and meanings as in its source:
 * registry/handlers/app.go through docker/go-metrics, registry/storage/driver/base,
 * registry/storage/cache, notifications/metrics.go, registry/proxy/proxymetrics.go), beside
 * berth's own, so dashboards written for Distribution read berth.
 */
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { describe, it } from 'node:test';
import { startBerth } from '../helpers/berth.js';
import { buildImage, pushImageOK } from '../helpers/images.js';
import { eventually, startReceiver } from '../helpers/receiver.js';

const PROMETHEUS = { addr: '127.0.0.1:0', prometheus: { enabled: true, path: '/metrics' } };

/** the value of the sample of `name` whose labels are exactly `labels` (in any order); undefined when absent */
function sample(text: string, name: string, labels: Record<string, string>): number | undefined {
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][\w:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const found = Object.fromEntries([...(m[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1], l[2]]));
    if (Object.keys(found).length === Object.keys(labels).length && Object.entries(labels).every(([k, v]) => found[k] === v)) return Number(m[3]);
  }
  return undefined;
}

/** polls an asynchronous condition every 20 ms for up to 5 s */
async function until(condition: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = Date.now() + 5000;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function scrape(debugURL: string | undefined): Promise<string> {
  assert.ok(debugURL);
  const res = await fetch(`${debugURL}/metrics`);
  assert.equal(res.status, 200);
  return res.text();
}

describe("/metrics: Distribution's families", () => {
  it('registry_http_*, registry_storage_action_seconds, registry_storage_cache_* and registry_notifications_*', async () => {
    const rx = await startReceiver();
    // in memory: the filesystem vouches for a directory only once it has settled (a second or so)
    const registry = await startBerth({ http: { draintimeout: '1s', debug: PROMETHEUS }, notifications: { endpoints: [{ name: 'dash', url: rx.url }] } }, { driver: 'inmemory' });
    try {
      const image = await pushImageOK(registry.url, 'dash/repo', buildImage('docker-v2', { layers: 1, layerSize: 128 }), 'latest');
      await (await fetch(`${registry.url}/v2/dash/repo/manifests/latest`)).arrayBuffer();
      await (await fetch(`${registry.url}/v2/dash/repo/manifests/latest`)).arrayBuffer();
      assert.equal((await fetch(`${registry.url}/v2/dash/repo/manifests/missing`)).status, 404);
      await eventually(() => registry.app.notifier.snapshot()[0].Metrics.Successes === rx.delivered().length && rx.delivered().length >= 4, 5000, 'events delivered');
      const text = await scrape(registry.app.debugURL);

      // HTTP, per Distribution route name: the method in lower case, the status as a number
      assert.equal(sample(text, 'registry_http_requests_total', { handler: 'manifest', code: '201', method: 'put' }), 1);
      assert.equal(sample(text, 'registry_http_requests_total', { handler: 'manifest', code: '200', method: 'get' }), 2);
      assert.equal(sample(text, 'registry_http_requests_total', { handler: 'manifest', code: '404', method: 'get' }), 1);
      assert.ok((sample(text, 'registry_http_requests_total', { handler: 'blob_upload', code: '202', method: 'post' }) ?? 0) >= 2);
      assert.ok((sample(text, 'registry_http_requests_total', { handler: 'blob_upload_chunk', code: '201', method: 'put' }) ?? 0) >= 2);
      assert.equal(sample(text, 'registry_http_request_duration_seconds_count', { handler: 'manifest', method: 'get' }), 3);
      assert.equal(sample(text, 'registry_http_request_duration_seconds_bucket', { handler: 'manifest', method: 'get', le: '60' }), 3);
      // one size observation per request of the handler, whatever its method and status
      const manifestRequests = text.split('\n').filter((l) => l.startsWith('registry_http_requests_total{') && l.includes('handler="manifest"')).reduce((n, l) => n + Number(l.split(' ').pop()), 0);
      assert.ok(manifestRequests >= 4, `${manifestRequests} manifest requests`);
      assert.equal(sample(text, 'registry_http_request_size_bytes_count', { handler: 'manifest' }), manifestRequests);
      assert.ok((sample(text, 'registry_http_response_size_bytes_sum', { handler: 'manifest' }) ?? 0) >= 2 * image.body.length);
      assert.equal(sample(text, 'registry_http_response_size_bytes_bucket', { handler: 'manifest', le: '2147483648' }), manifestRequests);

      // storage calls, with Distribution's action names
      assert.ok((sample(text, 'registry_storage_action_seconds_count', { driver: 'inmemory', action: 'PutContent' }) ?? 0) >= 1);
      assert.ok((sample(text, 'registry_storage_action_seconds_count', { driver: 'inmemory', action: 'GetContent' }) ?? 0) >= 1);
      assert.ok((sample(text, 'registry_storage_action_seconds_count', { driver: 'inmemory', action: 'Move' }) ?? 0) >= 1);

      // the metadata cache: the second pull by tag is answered from it
      const requests = sample(text, 'registry_storage_cache_requests_total', {}) ?? 0;
      const hits = sample(text, 'registry_storage_cache_hits_total', {}) ?? 0;
      assert.ok(requests > 0 && hits > 0 && hits <= requests, `requests ${requests}, hits ${hits}`);
      assert.equal(sample(text, 'registry_storage_cache_errors_total', {}), 0);

      // notifications
      const delivered = rx.delivered().length;
      assert.equal(sample(text, 'registry_notifications_events_total', { type: 'Events', endpoint: 'dash' }), delivered);
      assert.equal(sample(text, 'registry_notifications_events_total', { type: 'Successes', endpoint: 'dash' }), delivered);
      assert.equal(sample(text, 'registry_notifications_events_total', { type: 'Failures', endpoint: 'dash' }), 0);
      assert.equal(sample(text, 'registry_notifications_pending_total', { endpoint: 'dash' }), 0);
      assert.equal(sample(text, 'registry_notifications_status_total', { code: '200 OK', endpoint: 'dash' }), delivered);

      // berth's own families stay
      assert.equal(sample(text, 'berth_http_requests_total', { method: 'PUT', route: 'manifest', code: '201' }), 1);
    } finally {
      await registry.stop();
      await rx.close();
    }
  });

  it('registry_http_in_flight_requests: a request counts while it runs, and not after it ended or was cut', async () => {
    const registry = await startBerth({ http: { debug: PROMETHEUS } }, { driver: 'inmemory' });
    const inFlight = async () => sample(await scrape(registry.app.debugURL), 'registry_http_in_flight_requests', { handler: 'blob_upload_chunk' });
    /** a PATCH of an upload whose body stays open until `finish` is called */
    const openPatch = async () => {
      const started = await fetch(`${registry.url}/v2/flight/repo/blobs/uploads/`, { method: 'POST' });
      assert.equal(started.status, 202);
      const location = new URL(started.headers.get('location')!, registry.url);
      const req = request(location, { method: 'PATCH', headers: { 'content-type': 'application/octet-stream' } });
      const answered = new Promise<number>((resolve, reject) => {
        req.on('response', (res) => {
          res.resume();
          resolve(res.statusCode!);
        });
        req.on('error', reject);
      });
      req.write(Buffer.alloc(1024));
      return { req, answered };
    };
    try {
      assert.equal(await inFlight(), 0, 'registered at 0 from the start');
      const first = await openPatch();
      await until(async () => (await inFlight()) === 1, 'the open PATCH counted');
      first.req.end();
      assert.equal(await first.answered, 202);
      await until(async () => (await inFlight()) === 0, 'counted out once answered');
      const cut = await openPatch();
      await until(async () => (await inFlight()) === 1, 'the second PATCH counted');
      cut.answered.catch(() => undefined);
      cut.req.destroy();
      await until(async () => (await inFlight()) === 0, 'counted out when the client went away');
    } finally {
      await registry.stop();
    }
  });

  it('registry_proxy_*: requests, hits, misses and bytes pulled, by type', async () => {
    const upstream = await startBerth({});
    const mirror = await startBerth({ http: { debug: PROMETHEUS }, proxy: { remoteurl: upstream.url } });
    try {
      const image = await pushImageOK(upstream.url, 'library/app', buildImage('docker-v2', { layers: 1, layerSize: 256 }), 'v1');
      for (let i = 0; i < 2; i++) {
        const res = await fetch(`${mirror.url}/v2/library/app/manifests/${image.digest}`, { headers: { accept: image.mediaType } });
        assert.equal(res.status, 200);
        await res.arrayBuffer();
        const blob = await fetch(`${mirror.url}/v2/library/app/blobs/${image.blobs[0].digest}`);
        assert.equal(blob.status, 200);
        await blob.arrayBuffer();
      }
      const text = await scrape(mirror.app.debugURL);
      for (const type of ['blob', 'manifest']) {
        assert.equal(sample(text, 'registry_proxy_requests_total', { type }), 2, `${type} requests`);
        assert.equal(sample(text, 'registry_proxy_misses_total', { type }), 1, `${type} misses`);
        assert.equal(sample(text, 'registry_proxy_hits_total', { type }), 1, `${type} hits`);
      }
      assert.equal(sample(text, 'registry_proxy_pulled_bytes_total', { type: 'blob' }), image.blobs[0].size);
      assert.equal(sample(text, 'registry_proxy_pulled_bytes_total', { type: 'manifest' }), image.body.length);
    } finally {
      await mirror.stop();
      await upstream.stop();
    }
  });
});
