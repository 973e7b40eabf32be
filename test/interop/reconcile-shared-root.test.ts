/**
 * A root shared with Distribution (Debian's docker-registry 2.8.2) is reconciled: Distribution
 * pushes, moves a tag and deletes a manifest behind berth's back, so berth's metadata index is
 * told nothing; the next pass of berth's reconciler (run by its scheduler on a ManualClock, every
 * metadata.reconcile.interval) makes the index equal to storage, and berth's catalog and tag
 * list show Distribution's writes.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { openMetadataIndex } from '../../src/features/metadata.js';
import type { MetadataIndex } from '../../src/metadata/metadata-index.js';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { buildImage, pushImageOK } from '../helpers/images.js';
import { indexDifferences } from '../helpers/index-sync.js';
import { advanceUntil, ManualClock } from '../helpers/manual-clock.js';
import { startReferenceRegistry, type ReferenceRegistry } from '../helpers/reference-registry.js';
import { assertTool, needTool } from '../helpers/tools.js';

describe('a root shared with Distribution is reconciled', needTool('docker-registry', 'the shared-root reconcile test'), () => {
  let ref: ReferenceRegistry | undefined;
  let berth: TestRegistry | undefined;
  let index: MetadataIndex | undefined;
  const clock = new ManualClock(Date.now());

  before(async () => {
    assertTool('docker-registry', 'the shared-root reconcile test');
    ref = await startReferenceRegistry({ deleteEnabled: true, config: { log: { level: 'warn' } } });
    berth = await startBerth({ metadata: { reconcile: { interval: '10s' } } }, { root: ref.rootdirectory, clock });
    index = await openMetadataIndex(berth.app.config);
  });
  after(async () => {
    const results = await Promise.allSettled([index?.close(), berth?.stop(), ref?.stop()]);
    for (const r of results) if (r.status === 'rejected') throw r.reason;
  });

  it('Distribution pushes, tags, moves a tag and deletes; after one pass the index equals storage', async () => {
    const name = 'shared/app';
    const fromBerth = await pushImageOK(berth!.url, name, buildImage('oci-manifest'), 'berth');
    const [one, two, gone] = [buildImage('docker-v2'), buildImage('oci-manifest'), buildImage('docker-v2')];
    await pushImageOK(ref!.url, name, one, 'stable');
    await pushImageOK(ref!.url, name, one, 'v1');
    await pushImageOK(ref!.url, name, two, 'v1'); // moves v1
    await pushImageOK(ref!.url, name, gone, 'old');
    assert.equal((await fetch(`${ref!.url}/v2/${name}/manifests/${gone.digest}`, { method: 'DELETE' })).status, 202);
    await pushImageOK(ref!.url, 'shared/other', buildImage('oci-index'), 'latest');

    const before = await indexDifferences(berth!);
    assert.ok(before.length >= 3, before.join('\n')); // the index was told nothing of Distribution's writes

    const passes = async () => (await index!.state('reconciled-full')) !== undefined && (await index!.readRepository('shared/other')) !== undefined;
    await advanceUntil(clock, 'the reconciler ran', passes, { step: 10_000, ms: 90_000 });
    assert.deepEqual(await indexDifferences(berth!), []);
    const rows = await index!.readRepository(name);
    assert.deepEqual(
      rows?.tags.map((t) => [t.name, t.digest]),
      [
        ['berth', fromBerth.digest],
        ['stable', one.digest],
        ['v1', two.digest],
      ],
    );
    assert.deepEqual(rows?.manifests.map((m) => m.digest).sort(), [fromBerth.digest, one.digest, two.digest].sort());
    assert.deepEqual((await index!.tagHistory(name, 'v1')).map((h) => h.digest), [two.digest]);
  });
});
