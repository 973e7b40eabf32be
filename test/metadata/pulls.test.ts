/**
 * Pull counts in the metadata index (src/metadata/pulls.ts): a GET of a manifest, by tag or by
 * digest, counts one; a HEAD counts nothing; the counts are written in batches every FLUSH_MS on
 * the registry's clock (nothing before: no write per GET) and at close.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { openMetadataIndex } from '../../src/features/metadata.js';
import { FLUSH_MS, PullCounts } from '../../src/metadata/pulls.js';
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

describe('PullCounts after a failed write', () => {
  it('writes again at the next flush, with the counts of the batch that failed', async () => {
    // a database whose first transaction fails and whose later ones record the updates they run
    let calls = 0;
    const updates: string[] = [];
    const db = {
      transaction: () => ({
        execute: async (work: (tx: unknown) => Promise<void>) => {
          if (++calls === 1) throw new Error('database is locked');
          const tx = {
            updateTable: () => ({
              set: () => ({ where: (_c: string, _o: string, repository: string) => ({ where: (_d: string, _p: string, digest: string) => ({ execute: async () => void updates.push(`${repository}@${digest}`) }) }) }),
            }),
          };
          await work(tx);
        },
      }),
    };
    const counts = new PullCounts(db as never, () => Date.parse('2026-11-26T00:00:00Z'));
    counts.pulled('team/app', 'sha256:aa');
    await assert.rejects(counts.flush(), /database is locked/);
    counts.pulled('team/app', 'sha256:bb');
    await counts.flush();
    assert.deepEqual(updates.sort(), ['team/app@sha256:aa', 'team/app@sha256:bb']);
    assert.equal(counts.size, 0);
  });
});
