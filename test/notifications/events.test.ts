/**
 * Events produced by registry requests (spec 6.2, 6.4): every action, every field, through a real
 * registry and a real receiving listener. Each request carries its own X-Request-Id so its event
 * can be found by `request.id`.
 */
import assert from 'node:assert/strict';
import { hostname } from 'node:os';
import { after, before, describe, it } from 'node:test';
import { EVENTS_MEDIA_TYPE } from '../../src/notifications/events.js';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { pushBlob, randomBlob, sha256 } from '../helpers/blobs.js';
import { buildImage, pushContent, type Image } from '../helpers/images.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';

const UA = 'berth-events-test/1.0';
const RFC3339 = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$/;

type Json = Record<string, any>;

function call(url: string, method: string, id: string, init: { body?: Buffer<ArrayBuffer>; headers?: Record<string, string> } = {}): Promise<Response> {
  return fetch(url, { method, body: init.body, headers: { 'user-agent': UA, 'x-request-id': id, ...init.headers } });
}

function notificationsFor(rx: Receiver, extra: Json = {}): Json {
  return {
    http: { draintimeout: '1s' },
    notifications: { endpoints: [{ name: 'rx', url: `${rx.url}/events`, timeout: '2s', threshold: 3, backoff: '20ms' }], ...extra },
  };
}

describe('events from registry requests', () => {
  let rx: Receiver;
  let registry: TestRegistry;
  let port: string;
  const image: Image = buildImage('oci-manifest', { layers: 2, layerSize: 256 });
  const blob = randomBlob(1000);
  const mono = randomBlob(777);

  before(async () => {
    rx = await startReceiver();
    registry = await startBerth(notificationsFor(rx));
    port = new URL(registry.url).port;
  });
  after(async () => {
    await registry?.stop();
    await rx?.close();
  });

  const byRequest = (id: string) => rx.delivered().filter((e) => (e as Json).request.id === id) as Json[];
  async function eventOf(id: string): Promise<Json> {
    await rx.waitFor(() => byRequest(id).length > 0, 5000, `the event of request ${id}`);
    const events = byRequest(id);
    assert.equal(events.length, 1, `exactly one event for ${id}`);
    return events[0];
  }

  /** the fields every event carries, whatever its action */
  function checkCommon(event: Json, action: string, method: string, id: string): void {
    assert.deepEqual(Object.keys(event).sort(), ['action', 'actor', 'id', 'request', 'source', 'target', 'timestamp']);
    assert.equal(event.action, action);
    assert.match(event.id, /^[0-9a-f-]{36}$/);
    assert.match(event.timestamp, RFC3339);
    assert.ok(Math.abs(Date.parse(event.timestamp) - Date.now()) < 60_000, 'timestamp is now');
    assert.deepEqual(Object.keys(event.request).sort(), ['addr', 'host', 'id', 'method', 'useragent']);
    assert.equal(event.request.id, id);
    assert.match(event.request.addr, /^127\.0\.0\.1:\d+$/);
    assert.equal(event.request.host, `127.0.0.1:${port}`);
    assert.equal(event.request.method, method);
    assert.equal(event.request.useragent, UA);
    assert.deepEqual(event.actor, {}, 'anonymous: an empty actor');
    assert.equal(event.source.addr, `${hostname()}:${port}`);
    assert.match(event.source.instanceID, /^[0-9a-f-]{36}$/);
  }

  function checkBlobTarget(event: Json, name: string, digest: string, size: number): void {
    assert.deepEqual(event.target, {
      mediaType: 'application/octet-stream',
      digest,
      size,
      length: size,
      repository: name,
      url: `${registry.url}/v2/${name}/blobs/${digest}`,
      ...(event.action === 'mount' ? { fromRepository: event.target.fromRepository } : {}),
    });
  }

  it('blob push (POST, PATCH, PUT) and monolithic POST ?digest=', async () => {
    const start = await call(`${registry.url}/v2/ev/blobs/blobs/uploads/`, 'POST', 'start-upload');
    assert.equal(start.status, 202);
    const location = new URL(start.headers.get('location')!);
    const patched = await call(location.href, 'PATCH', 'patch-upload', { body: blob.data, headers: { 'content-type': 'application/octet-stream' } });
    assert.equal(patched.status, 202);
    const done = new URL(patched.headers.get('location')!);
    done.searchParams.set('digest', blob.digest);
    assert.equal((await call(done.href, 'PUT', 'put-upload')).status, 201);
    const pushed = await eventOf('put-upload');
    checkCommon(pushed, 'push', 'PUT', 'put-upload');
    checkBlobTarget(pushed, 'ev/blobs', blob.digest, 1000);

    const monolithic = await call(`${registry.url}/v2/ev/blobs/blobs/uploads/?digest=${mono.digest}`, 'POST', 'post-mono', {
      body: mono.data,
      headers: { 'content-type': 'application/octet-stream' },
    });
    assert.equal(monolithic.status, 201);
    const monoEvent = await eventOf('post-mono');
    checkCommon(monoEvent, 'push', 'POST', 'post-mono');
    checkBlobTarget(monoEvent, 'ev/blobs', mono.digest, 777);
    assert.equal(byRequest('start-upload').length + byRequest('patch-upload').length, 0, 'starting an upload and a chunk are no events');
  });

  it('blob pull on GET (also with Range), none on HEAD', async () => {
    assert.equal((await call(`${registry.url}/v2/ev/blobs/blobs/${blob.digest}`, 'HEAD', 'head-blob')).status, 200);
    const got = await call(`${registry.url}/v2/ev/blobs/blobs/${blob.digest}`, 'GET', 'get-blob');
    assert.equal(got.status, 200);
    await got.arrayBuffer();
    const pulled = await eventOf('get-blob');
    checkCommon(pulled, 'pull', 'GET', 'get-blob');
    checkBlobTarget(pulled, 'ev/blobs', blob.digest, 1000);
    const ranged = await call(`${registry.url}/v2/ev/blobs/blobs/${blob.digest}`, 'GET', 'get-range', { headers: { range: 'bytes=0-9' } });
    assert.equal(ranged.status, 206);
    await ranged.arrayBuffer();
    checkBlobTarget(await eventOf('get-range'), 'ev/blobs', blob.digest, 1000);
    assert.equal(byRequest('head-blob').length, 0, 'HEAD produces no event');
  });

  it('blob mount: action mount with fromRepository', async () => {
    const res = await call(`${registry.url}/v2/ev/mounted/blobs/uploads/?mount=${blob.digest}&from=ev/blobs`, 'POST', 'mount');
    assert.equal(res.status, 201);
    const mounted = await eventOf('mount');
    checkCommon(mounted, 'mount', 'POST', 'mount');
    assert.equal(mounted.target.fromRepository, 'ev/blobs');
    checkBlobTarget(mounted, 'ev/mounted', blob.digest, 1000);
    // a mount that falls back to an upload is no event
    const missing = sha256('not stored');
    assert.equal((await call(`${registry.url}/v2/ev/mounted/blobs/uploads/?mount=${missing}&from=ev/blobs`, 'POST', 'mount-miss')).status, 202);
  });

  it('manifest push by tag, pull by tag and by digest, none on HEAD', async () => {
    await pushContent(registry.url, 'ev/image', image);
    const put = await call(`${registry.url}/v2/ev/image/manifests/v1`, 'PUT', 'put-manifest', { body: image.body, headers: { 'content-type': image.mediaType } });
    assert.equal(put.status, 201);
    const manifestTarget = (tag?: string) => ({
      mediaType: image.mediaType,
      digest: image.digest,
      size: image.body.length,
      length: image.body.length,
      repository: 'ev/image',
      url: `${registry.url}/v2/ev/image/manifests/${image.digest}`,
      ...(tag ? { tag } : {}),
    });
    const pushed = await eventOf('put-manifest');
    checkCommon(pushed, 'push', 'PUT', 'put-manifest');
    assert.deepEqual(pushed.target, manifestTarget('v1'));

    assert.equal((await call(`${registry.url}/v2/ev/image/manifests/v1`, 'HEAD', 'head-manifest')).status, 200);
    const byTag = await call(`${registry.url}/v2/ev/image/manifests/v1`, 'GET', 'get-manifest-tag', { headers: { accept: image.mediaType } });
    assert.equal(byTag.status, 200);
    await byTag.arrayBuffer();
    const pulled = await eventOf('get-manifest-tag');
    checkCommon(pulled, 'pull', 'GET', 'get-manifest-tag');
    assert.deepEqual(pulled.target, manifestTarget('v1'));

    const byDigest = await call(`${registry.url}/v2/ev/image/manifests/${image.digest}`, 'GET', 'get-manifest-digest');
    await byDigest.arrayBuffer();
    assert.deepEqual((await eventOf('get-manifest-digest')).target, manifestTarget());
    assert.equal(byRequest('head-manifest').length, 0, 'HEAD produces no event');
  });

  it('manifest and blob deletes carry only digest and repository', async () => {
    assert.equal((await call(`${registry.url}/v2/ev/image/manifests/${image.digest}`, 'DELETE', 'delete-manifest')).status, 202);
    const manifestDeleted = await eventOf('delete-manifest');
    checkCommon(manifestDeleted, 'delete', 'DELETE', 'delete-manifest');
    assert.deepEqual(manifestDeleted.target, { digest: image.digest, repository: 'ev/image' });

    assert.equal((await call(`${registry.url}/v2/ev/blobs/blobs/${blob.digest}`, 'DELETE', 'delete-blob')).status, 202);
    const blobDeleted = await eventOf('delete-blob');
    checkCommon(blobDeleted, 'delete', 'DELETE', 'delete-blob');
    assert.deepEqual(blobDeleted.target, { digest: blob.digest, repository: 'ev/blobs' });
  });

  it('failed requests produce no events; every envelope was a POST of the events media type', async () => {
    assert.equal((await call(`${registry.url}/v2/ev/blobs/blobs/${blob.digest}`, 'GET', 'get-deleted')).status, 404);
    assert.equal((await call(`${registry.url}/v2/ev/image/manifests/nope`, 'GET', 'get-unknown')).status, 404);
    // a later event, so the receiver has seen everything emitted before it
    await pushBlob(registry.url, 'ev/late', randomBlob(10).data);
    await rx.waitFor(() => rx.delivered().some((e) => (e as Json).target.repository === 'ev/late'), 5000, 'the later event');
    assert.equal(byRequest('get-deleted').length + byRequest('get-unknown').length + byRequest('mount-miss').length, 0);
    assert.ok(rx.requests.every((r) => r.method === 'POST' && r.path === '/events' && r.headers['content-type'] === EVENTS_MEDIA_TYPE));
    const ids = rx.delivered().map((e) => (e as Json).id);
    assert.equal(new Set(ids).size, ids.length, 'event ids are unique');
  });
});

describe('event URLs and references', () => {
  it('builds target URLs from http.host, and lists references with events.includereferences', async () => {
    const rx = await startReceiver();
    const registry = await startBerth({
      ...notificationsFor(rx, { events: { includereferences: true } }),
      http: { host: 'https://registry.example.com', relativeurls: true, draintimeout: '1s' },
    });
    try {
      const image = buildImage('oci-manifest', { layers: 2, layerSize: 128 });
      await pushContent(registry.url, 'refs/image', image);
      const put = await call(`${registry.url}/v2/refs/image/manifests/${image.digest}`, 'PUT', 'put-refs', { body: image.body, headers: { 'content-type': image.mediaType } });
      assert.equal(put.status, 201);
      await rx.waitFor(() => rx.delivered().some((e) => (e as Json).request.id === 'put-refs'), 5000, 'the manifest event');
      const event = rx.delivered().find((e) => (e as Json).request.id === 'put-refs') as Json;
      assert.equal(event.target.url, `https://registry.example.com/v2/refs/image/manifests/${image.digest}`, 'absolute even with relativeurls');
      assert.equal(event.target.tag, undefined, 'no tag when pushed by digest');
      assert.deepEqual(
        event.target.references,
        image.blobs.map((b) => ({ mediaType: b.mediaType, digest: b.digest, size: b.size })),
      );
      const blobEvent = rx.delivered().find((e) => (e as Json).target.digest === image.blobs[0].digest) as Json;
      assert.equal(blobEvent.target.url, `https://registry.example.com/v2/refs/image/blobs/${image.blobs[0].digest}`);
      assert.equal(blobEvent.target.references, undefined);
    } finally {
      await registry.stop();
      await rx.close();
    }
  });
});

describe('a hanging endpoint and registry requests', () => {
  it('never delays pushes and pulls', async () => {
    const rx = await startReceiver(() => ({ hang: true }));
    const registry = await startBerth({
      http: { draintimeout: '100ms' },
      notifications: { endpoints: [{ name: 'hangs', url: rx.url, timeout: '30s' }] },
    });
    try {
      const blob = randomBlob(2048);
      // each request must complete while the endpoint holds the first envelope (timeout 30 s)
      const bounded = { signal: AbortSignal.timeout(10_000) };
      for (let i = 0; i < 3; i++) {
        const start = await fetch(`${registry.url}/v2/hang/repo/blobs/uploads/?digest=${i === 0 ? blob.digest : sha256(String(i))}`, {
          method: 'POST',
          body: i === 0 ? blob.data : Buffer.from(String(i)),
          headers: { 'content-type': 'application/octet-stream' },
          ...bounded,
        });
        assert.equal(start.status, 201);
      }
      const got = await fetch(`${registry.url}/v2/hang/repo/blobs/${blob.digest}`, bounded);
      assert.equal(got.status, 200);
      assert.equal(Buffer.from(await got.arrayBuffer()).length, 2048);
      const [hangs] = registry.app.notifier.snapshot();
      assert.equal(hangs.Metrics.Events, 4);
      assert.equal(hangs.Metrics.Successes, 0);
      assert.equal(hangs.Metrics.Pending, 4);
    } finally {
      await registry.stop();
      await rx.close();
    }
  });
});
