/** Uploads older than storage.maintenance.uploadpurging.age are purged and answer 404 (spec 3.1, timeout row). */
import assert from 'node:assert/strict';
import { access, mkdir, readdir, readFile, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { scheduleState } from '../../src/registry/layout.js';
import { purgeUploads } from '../../src/registry/purge.js';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { errorCodes } from '../helpers/blobs.js';
import { advanceUntil, ManualClock } from '../helpers/manual-clock.js';

const HOUR = 3_600_000;

const startUpload = async (url: string, name: string) => {
  const res = await fetch(`${url}/v2/${name}/blobs/uploads/`, { method: 'POST' });
  assert.equal(res.status, 202);
  return res.headers.get('location')!;
};

const uploadsDir = (registry: TestRegistry, name: string) => join(registry.root!, 'docker/registry/v2/repositories', name, '_uploads');

/** makes the upload at `location` look started `ms` ago (its `startedat` file), instead of waiting that long */
async function backdate(registry: TestRegistry, name: string, location: string, ms: number): Promise<void> {
  const uuid = new URL(location, registry.url).pathname.split('/').pop()!;
  await writeFile(join(uploadsDir(registry, name), uuid, 'startedat'), new Date(Date.now() - ms).toISOString());
}

/** waits (bounded) for `dir` to hold `n` entries: the purge's storage work is real I/O, not clock time */
async function entriesBecome(dir: string, n: number, what: string): Promise<void> {
  const deadline = Date.now() + 5000;
  while ((await readdir(dir)).length !== n) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('upload purging', () => {
  it('an upload older than the purge age answers 404 BLOB_UPLOAD_UNKNOWN and its data is removed', async () => {
    const registry = await startBerth({ storage: { maintenance: { uploadpurging: { age: '1h', interval: '1h' } } } });
    try {
      const location = await startUpload(registry.url, 'old/upload');
      assert.equal((await fetch(location, { method: 'PATCH', body: 'abc' })).status, 202);
      await backdate(registry, 'old/upload', location, HOUR + 60_000);
      const res = await fetch(location);
      assert.equal(res.status, 404);
      assert.deepEqual(await errorCodes(res), ['BLOB_UPLOAD_UNKNOWN']);
      assert.deepEqual(await readdir(uploadsDir(registry, 'old/upload')), []);
    } finally {
      await registry.stop();
    }
  });

  it('the background purge removes old uploads and keeps young ones', async () => {
    const registry = await startBerth({ storage: { maintenance: { uploadpurging: { age: '1h' } } } });
    try {
      await startUpload(registry.url, 'p/one');
      await startUpload(registry.url, 'p/two');
      const uploads = (name: string) => uploadsDir(registry, name);
      const dryRun = await purgeUploads(registry.app.driver, new Date(Date.now() + 1000), true);
      assert.equal(dryRun.purged.length, 2);
      assert.equal((await readdir(uploads('p/one'))).length, 1, 'a dry run removes nothing');
      const young = await purgeUploads(registry.app.driver, new Date(Date.now() - 60_000), false);
      assert.equal(young.purged.length, 0);
      const old = await purgeUploads(registry.app.driver, new Date(Date.now() + 1000), false);
      assert.deepEqual(
        old.purged.map((dir) => dir.replace(/\/[^/]+$/, '')).sort(),
        ['/docker/registry/v2/repositories/p/one/_uploads', '/docker/registry/v2/repositories/p/two/_uploads'],
      );
      assert.deepEqual(await readdir(uploads('p/one')), []);
      assert.deepEqual(await readdir(uploads('p/two')), []);
    } finally {
      await registry.stop();
    }
  });

  it('runs on its interval', async () => {
    const clock = new ManualClock(Date.now());
    const registry = await startBerth({ storage: { maintenance: { uploadpurging: { age: '1h', interval: '2h' } } } }, { clock });
    try {
      const dir = uploadsDir(registry, 'timed');
      const oldUpload = async () => {
        const location = await startUpload(registry.url, 'timed');
        await backdate(registry, 'timed', location, 2 * HOUR);
      };
      await oldUpload();
      const young = await startUpload(registry.url, 'timed');
      const youngUUID = new URL(young, registry.url).pathname.split('/').pop()!;
      // the first run comes after one interval, but at most a minute after start
      await clock.advance(59_000);
      assert.equal((await readdir(dir)).length, 2, 'nothing runs before the first delay');
      await clock.advance(1000);
      await entriesBecome(dir, 1, 'the first run to purge the old upload');
      assert.deepEqual(await readdir(dir), [youngUUID], 'a young upload stays');
      // one instance per pass on a shared store: the pass's claim is in storage
      const state = JSON.parse(await readFile(join(registry.root!, scheduleState('upload-purge')), 'utf8'));
      assert.equal(typeof state.instance, 'string');
      await oldUpload();
      await clock.advance(2 * HOUR);
      // by the clock, the young upload is now two hours old too; the pass, shared by the instances
      // on the store, looks every minute whether one is due
      await advanceUntil(clock, 'the next run purged both', async () => (await readdir(dir)).length === 0);
      await access(join(registry.root!, 'docker/registry/v2/repositories/timed'));
    } finally {
      await registry.stop();
    }
  });

  it('an upload without startedat is judged by its data time: young (a POST still writing) stays, old goes', async () => {
    const registry = await startBerth();
    try {
      const young = join(uploadsDir(registry, 'half/written'), 'a-post-in-flight');
      const old = join(uploadsDir(registry, 'half/written'), 'broken-long-ago');
      for (const dir of [young, old]) {
        await mkdir(dir, { recursive: true });
        await writeFile(join(dir, 'data'), 'abc');
      }
      const longAgo = new Date(Date.now() - 2 * HOUR);
      await utimes(join(old, 'data'), longAgo, longAgo);
      const result = await purgeUploads(registry.app.driver, new Date(Date.now() - HOUR), false);
      assert.deepEqual(result.purged.map((dir) => dir.split('/').pop()), ['broken-long-ago']);
      assert.deepEqual(await readdir(uploadsDir(registry, 'half/written')), ['a-post-in-flight']);
    } finally {
      await registry.stop();
    }
  });
});
