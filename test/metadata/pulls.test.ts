/**
 * Pull counts in the metadata index (src/metadata/pulls.ts): a GET of a manifest, by tag or by
 * digest, counts one; a HEAD counts nothing; the counts are written in batches every FLUSH_MS on
 * the registry's clock (nothing before: no write per GET) and at close.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { openMetadataIndex } from '../../src/features/metadata.js';
import { FLUSH_MS } from '../../src/metadata/pulls.js';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { buildImage, pushImageOK } from '../helpers/images.js';
import { ManualClock } from '../helpers/manual-clock.js';

const registries: TestRegistry[] = [];
after(async () => {
  for (const registry of registries) await registry.stop().catch(() => undefined);
});

async function pullsOf(registry: TestRegistry, name: string, digest: string): Promise<{ count: number; last: string | null }> {
  const index = await openMetadataIndex(registry.app.config);
  try {
    const row = await index.db.selectFrom('manifests').select(['pull_count', 'last_pulled_at']).where('repository', '=', name).where('digest', '=', digest).executeTakeFirstOrThrow();
    return { count: Number(row.pull_count), last: row.last_pulled_at };
  } finally {
    await index.close();
  }
}

describe('pull counts in the metadata index', () => {
  it('counts GETs by tag and digest, not HEADs, written every few seconds and at close', async () => {
    const clock = new ManualClock(Date.parse('2026-11-25T12:00:00Z'));
    const registry = await startBerth({ metadata: {} }, { clock });
    registries.push(registry);
    const image = await pushImageOK(registry.url, 'pulls/app', buildImage('oci-manifest'), 'v1');
    const get = async (reference: string, method = 'GET') => {
      const res = await fetch(`${registry.url}/v2/pulls/app/manifests/${reference}`, { method, headers: { accept: image.mediaType } });
      assert.equal(res.status, 200);
      await res.arrayBuffer();
    };
    for (let i = 0; i < 3; i++) await get('v1');
    await get(image.digest);
    await get('v1', 'HEAD');
    await get(image.digest, 'HEAD');
    assert.deepEqual(await pullsOf(registry, 'pulls/app', image.digest), { count: 0, last: null }); // counted in memory only

    await clock.advance(FLUSH_MS);
    await new Promise((resolve) => setTimeout(resolve, 20));
    assert.deepEqual(await pullsOf(registry, 'pulls/app', image.digest), { count: 4, last: '2026-11-25T12:00:00.000Z' });

    await clock.advance(1000);
    await get('v1');
    await get('v1');
    await registry.app.close();
    assert.deepEqual(await pullsOf(registry, 'pulls/app', image.digest), { count: 6, last: '2026-11-25T12:00:06.000Z' });
  });
});
