/**
 * Notifications as CloudEvents (`format: cloudevents`, chosen per endpoint): a push to a registry
 * with two endpoints delivers Distribution's envelope to one and, to the other, one structured
 * CloudEvent 1.0 per event (application/cloudevents+json; type, source, id, time, subject; data
 * the envelope's event).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { buildImage, pushImageOK } from '../helpers/images.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';

describe('CloudEvents notifications', () => {
  let plain: Receiver;
  let cloud: Receiver;
  let registry: TestRegistry;
  before(async () => {
    plain = await startReceiver();
    cloud = await startReceiver();
    registry = await startBerth({
      notifications: {
        endpoints: [
          { name: 'plain', url: plain.url, timeout: '2s' },
          { name: 'cloud', url: cloud.url, timeout: '2s', format: 'cloudevents' },
        ],
      },
    });
  });
  after(async () => {
    await registry?.stop();
    await plain?.close();
    await cloud?.close();
  });

  it('delivers one structured CloudEvent per event to the endpoint that asks, the envelope to the other', async () => {
    const image = buildImage('docker-v2', { layers: 1 });
    await pushImageOK(registry.url, 'team/app', image, 'v1');
    const pushes = 1 + image.blobs.length;
    await cloud.waitFor(() => cloud.requests.length >= pushes, 5000, 'the CloudEvents');
    await plain.waitFor(() => plain.delivered().length >= pushes, 5000, 'the envelopes');
    assert.equal(plain.requests[0].headers['content-type'], 'application/vnd.registry.distribution.events.v2+json');
    const envelopeEvents = plain.delivered();

    assert.equal(cloud.requests.length, pushes);
    const received = cloud.requests.map((r) => {
      assert.equal(r.headers['content-type'], 'application/cloudevents+json');
      return JSON.parse(r.body) as Record<string, unknown>;
    });
    const manifest = received.find((e) => (e.data as { target: { mediaType: string } }).target.mediaType === image.mediaType)!;
    assert.ok(manifest, JSON.stringify(received));
    const data = manifest.data as { id: string; timestamp: string; action: string; target: { digest: string; tag: string; repository: string } };
    assert.deepEqual(
      { specversion: manifest.specversion, type: manifest.type, source: manifest.source, subject: manifest.subject, datacontenttype: manifest.datacontenttype },
      { specversion: '1.0', type: 'io.berth.push', source: '/v2/team/app', subject: 'v1', datacontenttype: 'application/json' },
    );
    assert.equal(manifest.id, data.id);
    assert.equal(manifest.time, data.timestamp);
    assert.equal(data.target.digest, image.digest);
    // data is the event the envelope carries
    const twin = envelopeEvents.find((e) => (e.target as { digest: string; tag?: string }).digest === image.digest);
    assert.deepEqual(Object.keys(data).sort(), Object.keys(twin!).sort());
    const blob = received.find((e) => e !== manifest)!;
    assert.equal(blob.subject, (blob.data as { target: { digest: string } }).target.digest);
  });

  it('refuses an unknown format with the choices', async () => {
    await assert.rejects(
      startBerth({ notifications: { endpoints: [{ name: 'x', url: 'http://127.0.0.1:1/', format: 'json' }] } }, { driver: 'inmemory' }),
      /notifications\.endpoints\.0\.format.*expected distribution or cloudevents/s,
    );
  });
});
