/**
 * The pull-through cache's fills are writes: each manifest and whole blob it stores from the
 * upstream is recorded as `proxy-fill` (the registry itself is the actor), once; a second pull,
 * served from the cache, records nothing.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { FLUSH_MS } from '../../src/audit/sink.js';
import { AuditLog } from '../../src/metadata/audit.js';
import { openDatabase } from '../../src/metadata/open.js';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { buildImage, pushImageOK } from '../helpers/images.js';
import { ManualClock } from '../helpers/manual-clock.js';

describe('audit of the pull-through cache', () => {
  let upstream: TestRegistry;
  let mirror: TestRegistry;
  const clock = new ManualClock();
  before(async () => {
    upstream = await startBerth({}, { driver: 'inmemory' });
    mirror = await startBerth({ proxy: { upstreams: [{ prefix: 'up', remoteurl: upstream.url }] } }, { clock });
  });
  after(async () => {
    await mirror?.stop();
    await upstream?.stop();
  });

  it('records each manifest and blob stored from the upstream once', async () => {
    const image = buildImage('docker-v2', { layers: 2 });
    await pushImageOK(upstream.url, 'library/app', image, 'v1');
    for (let pull = 0; pull < 2; pull++) {
      const manifest = await fetch(`${mirror.url}/v2/up/library/app/manifests/v1`, { headers: { accept: image.mediaType } });
      assert.equal(manifest.status, 200);
      await manifest.arrayBuffer();
      for (const blob of image.blobs) {
        const res = await fetch(`${mirror.url}/v2/up/library/app/blobs/${blob.digest}`);
        assert.equal(res.status, 200);
        assert.equal(Buffer.from(await res.arrayBuffer()).length, blob.data.length);
      }
    }
    await clock.advance(FLUSH_MS);
    const { db } = await openDatabase({ sqlite: { path: join(mirror.root!, 'berth/metadata.sqlite') } });
    try {
      const fills = await new AuditLog(db).page({ action: 'proxy-fill' }, { newest: false, limit: 100 });
      const host = new URL(upstream.url).host;
      assert.deepEqual(
        fills.map((r) => [r.repository, r.target, r.actor, r.outcome, r.detail]).sort(),
        [
          ['up/library/app', 'v1', undefined, 'ok', `manifest ${image.digest} fetched from ${host}`],
          ...image.blobs.map((b) => ['up/library/app', b.digest, undefined, 'ok', `blob fetched from ${host}`]),
        ].sort(),
      );
    } finally {
      await db.destroy();
    }
  });
});
