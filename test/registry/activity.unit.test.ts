/** Activity times: the pull recorder's throttle and bound, and the times read back (in-memory driver). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setImmediate as tick } from 'node:timers/promises';
import { PullRecorder, readActivity, recordInterval } from '../../src/registry/activity.js';
import type { Digest } from '../../src/registry/digest.js';
import * as layout from '../../src/registry/layout.js';
import { writeRevisionMeta } from '../../src/registry/revision-meta.js';
import { InMemoryDriver } from '../../src/storage/inmemory.js';
import type { StorageDriver } from '../../src/storage/driver.js';

const DIGEST: Digest = `sha256:${'a'.repeat(64)}`;
const OTHER: Digest = `sha256:${'b'.repeat(64)}`;

/** counts the writes of berth.pulled files */
function counting(driver: StorageDriver): { driver: StorageDriver; writes: string[] } {
  const writes: string[] = [];
  const put = driver.putContent.bind(driver);
  driver.putContent = (path, content) => {
    writes.push(`${path}=${content.toString()}`);
    return put(path, content);
  };
  return { driver, writes };
}

describe('PullRecorder', () => {
  it('writes a revision at most once per interval, with the time of the pull', async () => {
    let now = Date.parse('2026-03-01T00:00:00Z');
    const { driver, writes } = counting(new InMemoryDriver());
    const recorder = new PullRecorder(driver, { interval: 60_000, now: () => now });
    for (let i = 0; i < 100; i++) recorder.pulled('lib/a', DIGEST);
    await tick();
    assert.deepEqual(writes, [`${layout.manifestRevisionPulled('lib/a', DIGEST)}=2026-03-01T00:00:00.000Z`]);
    now += 59_999;
    recorder.pulled('lib/a', DIGEST);
    recorder.pulled('lib/b', DIGEST); // another repository is another revision
    await tick();
    assert.equal(writes.length, 2);
    now += 1;
    recorder.pulled('lib/a', DIGEST);
    await tick();
    assert.equal(writes.length, 3);
    assert.equal((await driver.getContent(layout.manifestRevisionPulled('lib/a', DIGEST))).toString(), '2026-03-01T00:01:00.000Z');
  });

  it('forgets revisions written more than an interval ago, so its map stays small', async () => {
    let now = 0;
    const recorder = new PullRecorder(new InMemoryDriver(), { interval: 1000, now: () => now });
    for (let i = 0; i < 50; i++) recorder.pulled(`lib/r${i}`, DIGEST);
    assert.equal(recorder.size, 50);
    now = 1001;
    recorder.pulled('lib/r0', OTHER);
    assert.equal(recorder.size, 1);
  });

  it('tries again at the next pull when a write failed', async () => {
    const driver = new InMemoryDriver();
    let fail = true;
    const put = driver.putContent.bind(driver);
    driver.putContent = (path, content) => (fail ? Promise.reject(new Error('storage down')) : put(path, content));
    const errors: unknown[] = [];
    const recorder = new PullRecorder(driver, { interval: 60_000, now: () => 5000, onError: (err) => errors.push(err) });
    recorder.pulled('lib/a', DIGEST);
    await tick();
    assert.equal(errors.length, 1);
    fail = false;
    recorder.pulled('lib/a', DIGEST);
    await tick();
    assert.equal((await driver.getContent(layout.manifestRevisionPulled('lib/a', DIGEST))).toString(), new Date(5000).toISOString());
  });

  it('records at a tenth of the shortest duration decided by pulls, between 1 s and 1 h', () => {
    assert.equal(recordInterval([168 * 3_600_000]), 3_600_000);
    assert.equal(recordInterval([3_600_000, 0, 600_000]), 60_000);
    assert.equal(recordInterval([2000]), 1000);
  });
});

describe('readActivity', () => {
  it("takes the push time from berth.json or the revision link, whichever is later, and the last pull from berth.pulled", async () => {
    const driver = new InMemoryDriver();
    await driver.putContent(layout.manifestRevisionLink('lib/a', DIGEST), Buffer.from(DIGEST));
    const linked = (await driver.stat(layout.manifestRevisionLink('lib/a', DIGEST))).modTime.getTime();
    assert.deepEqual(await readActivity(driver, 'lib/a', DIGEST), { pushed: linked, pulled: undefined }, 'a revision Distribution wrote: its link');
    await writeRevisionMeta(driver, 'lib/a', DIGEST, { mediaType: 'x', pushed: new Date(linked + 5000).toISOString() });
    await driver.putContent(layout.manifestRevisionPulled('lib/a', DIGEST), Buffer.from(new Date(linked + 9000).toISOString()));
    assert.deepEqual(await readActivity(driver, 'lib/a', DIGEST), { pushed: linked + 5000, pulled: linked + 9000 });
    await writeRevisionMeta(driver, 'lib/a', DIGEST, { mediaType: 'x', pushed: new Date(linked - 86_400_000).toISOString() });
    assert.equal((await readActivity(driver, 'lib/a', DIGEST)).pushed, linked, 'a stale berth.json (Distribution pushed it again): the link');
    assert.deepEqual(await readActivity(driver, 'lib/a', OTHER), { pushed: undefined, pulled: undefined });
  });
});
