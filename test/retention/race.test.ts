/**
 * Retention against pushes in flight (issue 26, item 1; issue 32): a re-push of a tag while the
 * pass deletes it, a re-push of an untagged manifest's tag while the pass deletes the revision,
 * an index reusing an old untagged child while the pass deletes it. Each interleaving is made by
 * hand: the pass's storage holds its delete until the PUT has written what it writes, then lets
 * it through. Every acknowledged push must be served by tag and by digest afterwards. And the
 * summary of a pass over several repositories at once counts every one of them.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Digest } from '../../src/registry/digest.js';
import * as layout from '../../src/registry/layout.js';
import { applyRetention, type RetentionSummary } from '../../src/registry/retention/index.js';
import { compilePolicies } from '../../src/registry/retention/policy.js';
import { unlessMissing, type StorageDriver } from '../../src/storage/driver.js';
import { ForwardingDriver } from '../../src/storage/forwarding.js';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { buildImage, pushImageOK, putManifest, type Image } from '../helpers/images.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { servedWhole } from '../gc/online-harness.js';

const HOUR = 3_600_000;
const POLICIES = compilePolicies([{ repositories: ['ret/**'], keep: { newest: 1 }, delete: { tagsolderthan: 1000, untaggedolderthan: 1000 } }]);
const CONFIG = {
  storage: {
    maintenance: {
      // on, for the push's half of the protocol, but on no repository of these tests: the pass that
      // races each push is the test's own, not the one the scheduler starts as the clock advances
      retention: { enabled: true, interval: '24h', policies: [{ repositories: ['elsewhere/**'], keep: { newest: 1 }, delete: { tagsolderthan: '1s', untaggedolderthan: '1s' } }] },
      uploadpurging: { enabled: false },
    },
  },
};

const modified = async (driver: StorageDriver, path: string) => (await unlessMissing(driver.stat(path)))?.modTime.getTime();

/**
 * The pass's storage: the first delete of `target` starts `push` and waits until the push has
 * written the link at `written` (or has ended), then deletes.
 */
function racingDriver(inner: StorageDriver, target: string, written: string, push: () => Promise<Response>): { driver: StorageDriver; response: () => Promise<Response> } {
  let response: Promise<Response> | undefined;
  const driver = new (class extends ForwardingDriver {
    override async delete(path: string): Promise<void> {
      if (path === target && !response) {
        const before = await modified(inner, written);
        let ended = false;
        response = push().finally(() => (ended = true));
        while (!ended && (await modified(inner, written)) === before) await new Promise((resolve) => setTimeout(resolve, 1));
      }
      await super.delete(path);
    }
  })(inner);
  return {
    driver,
    response: () => {
      assert.ok(response, 'the pass deleted the target');
      return response;
    },
  };
}

describe('retention against pushes in flight (filesystem)', () => {
  let berth: TestRegistry;
  let clock: ManualClock;
  before(async () => {
    clock = new ManualClock(Date.now());
    berth = await startBerth(CONFIG, { clock });
  });
  after(() => berth?.stop());

  const pass = (driver: StorageDriver, dryRun = false): Promise<RetentionSummary> => applyRetention(driver, { policies: POLICIES, now: clock.now(), dryRun });
  const status = async (name: string, reference: string, image: Image) =>
    (await fetch(`${berth.url}/v2/${name}/manifests/${reference}`, { headers: { accept: image.mediaType } })).status;

  it('a tag pushed again while the pass deletes it stays', async () => {
    const image = await pushImageOK(berth.url, 'ret/tag', buildImage('docker-v2', { layers: 1 }), 'v1');
    await pushImageOK(berth.url, 'ret/tag', buildImage('docker-v2', { layers: 1 }), 'v2');
    await clock.advance(HOUR);
    const race = racingDriver(berth.app.driver, layout.tagDir('ret/tag', 'v1'), layout.tagCurrentLink('ret/tag', 'v1'), () => putManifest(berth.url, 'ret/tag', 'v1', image.body, image.mediaType));
    await pass(race.driver);
    assert.equal((await race.response()).status, 201);
    assert.equal(await status('ret/tag', 'v1', image), 200, 'by tag after its 201');
    assert.equal(await status('ret/tag', image.digest, image), 200, 'by digest after its 201');
  });

  it('an untagged manifest tagged again while the pass deletes its revision stays', async () => {
    const image = await pushImageOK(berth.url, 'ret/untagged', buildImage('docker-v2', { layers: 1 }));
    await clock.advance(HOUR);
    const race = racingDriver(berth.app.driver, layout.manifestRevisionDir('ret/untagged', image.digest as Digest), layout.tagCurrentLink('ret/untagged', 'v1'), () =>
      putManifest(berth.url, 'ret/untagged', 'v1', image.body, image.mediaType),
    );
    await pass(race.driver);
    assert.equal((await race.response()).status, 201);
    assert.equal(await status('ret/untagged', 'v1', image), 200, 'by tag after its 201');
    assert.equal(await status('ret/untagged', image.digest, image), 200, 'by digest after its 201');
  });

  it('an index pushed while the pass deletes the old untagged child it reuses keeps it', async () => {
    const child = await pushImageOK(berth.url, 'ret/index', buildImage('oci-manifest', { layers: 1 }));
    await clock.advance(HOUR);
    // the guard writes a use again only after a quarter of the shortest age (250 ms): one written
    // just now by the child's push is recent on the store's clock, not on the test's clock
    await new Promise((resolve) => setTimeout(resolve, 300));
    const index = buildImage('oci-index', { children: [child] });
    const race = racingDriver(berth.app.driver, layout.manifestRevisionDir('ret/index', child.digest as Digest), layout.tagCurrentLink('ret/index', 'multi'), () =>
      putManifest(berth.url, 'ret/index', 'multi', index.body, index.mediaType),
    );
    const summary = await pass(race.driver);
    assert.equal((await race.response()).status, 201);
    assert.equal(await servedWhole(berth.url, 'ret/index', index), undefined);
    assert.equal(summary.manifestsDeleted, 0, 'the child was put back, not deleted');
  });

  it("a referrer untagged and old when the pass read the graph goes, although its subject is tagged again before the referrer's turn (the soak's two ret/b losses: the ledger's, not berth's)", async () => {
    const subject = await pushImageOK(berth.url, 'ret/referrer', buildImage('oci-manifest', { layers: 1 }));
    const referrer = await pushImageOK(berth.url, 'ret/referrer', buildImage('oci-artifact', { subject }));
    await clock.advance(HOUR);
    // the pass deletes the subject first (parents first), then, as it comes to the referrer, the
    // subject is pushed again under a kept tag: that PUT writes the subject again and records its use,
    // not the referrer's, which it does not name
    const race = racingDriver(berth.app.driver, layout.manifestRevisionDir('ret/referrer', referrer.digest as Digest), layout.tagCurrentLink('ret/referrer', 'keep-1'), () =>
      putManifest(berth.url, 'ret/referrer', 'keep-1', subject.body, subject.mediaType),
    );
    const summary = await pass(race.driver);
    assert.equal((await race.response()).status, 201);
    assert.equal(await servedWhole(berth.url, 'ret/referrer', subject), undefined, 'what the 201 acknowledged is served');
    assert.equal(await status('ret/referrer', referrer.digest, referrer), 404, 'deletable before the new tag: gone');
    assert.equal(summary.manifestsDeleted, 2);
  });

  it('a re-push of a tag with the digest it already names renews its age', async () => {
    const image = await pushImageOK(berth.url, 'ret/renew', buildImage('docker-v2', { layers: 1 }), 'v1');
    const other = await pushImageOK(berth.url, 'ret/renew', buildImage('docker-v2', { layers: 1 }), 'v2');
    await clock.advance(HOUR);
    assert.equal((await putManifest(berth.url, 'ret/renew', 'v1', image.body, image.mediaType)).status, 201);
    await clock.advance(500);
    await pushImageOK(berth.url, 'ret/renew', buildImage('docker-v2', { layers: 1 }), 'v3'); // the newest, kept by `newest: 1`
    const summary = await applyRetention(berth.app.driver, { policies: compilePolicies([{ ...POLICIES[0], repositories: ['ret/renew'] }]), now: clock.now(), dryRun: false });
    assert.equal(await status('ret/renew', 'v1', image), 200, 'pushed again 500 ms ago: younger than tagsolderthan (1 s)');
    assert.equal(await status('ret/renew', 'v2', other), 404, 'pushed an hour ago');
    assert.deepEqual(summary, { repositories: 1, tagsDeleted: 1, manifestsDeleted: 1 });
  });

  it("a dry run's summary counts the tags of every repository it went through at once (issue 32)", async () => {
    for (const n of [1, 2, 3, 4, 5]) {
      await pushImageOK(berth.url, `ret/many/r${n}`, buildImage('docker-v2', { layers: 1 }), 'old');
      await pushImageOK(berth.url, `ret/many/r${n}`, buildImage('docker-v2', { layers: 1 }), 'new');
    }
    await clock.advance(HOUR);
    const lines: string[] = [];
    const summary = await applyRetention(berth.app.driver, { policies: compilePolicies([{ ...POLICIES[0], repositories: ['ret/many/*'] }]), now: clock.now(), dryRun: true, report: (line) => lines.push(line) });
    assert.equal(lines.filter((line) => line.includes(': tag ')).length, 5);
    assert.deepEqual(summary, { repositories: 5, tagsDeleted: 5, manifestsDeleted: 5 });
  });
});
