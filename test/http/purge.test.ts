/** Uploads older than storage.maintenance.uploadpurging.age are purged and answer 404 (spec 3.1, timeout row). */
import assert from 'node:assert/strict';
import { access, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { purgeUploads } from '../../src/registry/purge.js';
import { startBerth } from '../helpers/berth.js';
import { errorCodes } from '../helpers/blobs.js';

const startUpload = async (url: string, name: string) => {
  const res = await fetch(`${url}/v2/${name}/blobs/uploads/`, { method: 'POST' });
  assert.equal(res.status, 202);
  return res.headers.get('location')!;
};

describe('upload purging', () => {
  it('an upload older than the purge age answers 404 BLOB_UPLOAD_UNKNOWN and its data is removed', async () => {
    // the age leaves room for a loaded machine between POST and PATCH (300 ms did not, once)
    const registry = await startBerth({ storage: { maintenance: { uploadpurging: { age: '1500ms', interval: '1h' } } } });
    try {
      const location = await startUpload(registry.url, 'old/upload');
      assert.equal((await fetch(location, { method: 'PATCH', body: 'abc' })).status, 202);
      await sleep(1600);
      const res = await fetch(location);
      assert.equal(res.status, 404);
      assert.deepEqual(await errorCodes(res), ['BLOB_UPLOAD_UNKNOWN']);
      assert.deepEqual(await readdir(join(registry.root!, 'docker/registry/v2/repositories/old/upload/_uploads')), []);
    } finally {
      await registry.stop();
    }
  });

  it('the background purge removes old uploads and keeps young ones', async () => {
    const registry = await startBerth({ storage: { maintenance: { uploadpurging: { age: '1h' } } } });
    try {
      await startUpload(registry.url, 'p/one');
      await startUpload(registry.url, 'p/two');
      const uploads = (name: string) => join(registry.root!, 'docker/registry/v2/repositories', name, '_uploads');
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
    const registry = await startBerth({ storage: { maintenance: { uploadpurging: { age: '100ms', interval: '200ms' } } } });
    try {
      await startUpload(registry.url, 'timed');
      const dir = join(registry.root!, 'docker/registry/v2/repositories/timed/_uploads');
      const deadline = Date.now() + 5000;
      while ((await readdir(dir)).length > 0 && Date.now() < deadline) await sleep(100);
      assert.deepEqual(await readdir(dir), []);
      await access(join(registry.root!, 'docker/registry/v2/repositories/timed'));
    } finally {
      await registry.stop();
    }
  });
});
