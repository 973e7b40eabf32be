/**
 * The reconciler's table (repository_versions) and the pull counts on both engines: a pass fills
 * an empty index from storage and the next skips what did not change; the counts of two processes
 * (two PullCounts on one database) add up, and a later pull's time wins.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { validateConfig } from '../../src/config/load.js';
import { openMetadataIndex } from '../../src/features/metadata.js';
import type { MetadataIndex } from '../../src/metadata/metadata-index.js';
import { PullCounts } from '../../src/metadata/pulls.js';
import { reconcileIndex } from '../../src/registry/indexing/reconcile.js';
import { verifyIndex } from '../../src/registry/indexing/verify-index.js';
import { FilesystemDriver } from '../../src/storage/filesystem.js';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { buildImage, pushImageOK } from '../helpers/images.js';
import { needPostgres, startPostgres, type TestPostgres } from '../helpers/postgres.js';

let dir: string;
let pg: TestPostgres | undefined;
let counter = 0;
let registry: TestRegistry;
const indexes: MetadataIndex[] = [];

const ENGINES = [
  { name: 'SQLite', options: { skip: false as const }, block: async () => ({ sqlite: { path: join(dir, `index-${++counter}.sqlite`) } }) },
  { name: 'PostgreSQL', options: needPostgres(), block: async () => ({ postgres: { url: await (pg ??= await startPostgres()).createDatabase(`reconcile_${++counter}`) } }) },
];

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'berth-engines-reconcile-'));
  registry = await startBerth({}); // storage written without an index
  await pushImageOK(registry.url, 'eng/app', buildImage('oci-manifest'), 'v1');
  await pushImageOK(registry.url, 'eng/multi', buildImage('oci-index'), 'latest');
});
after(async () => {
  for (const index of indexes) await index.close().catch(() => undefined);
  await registry?.stop();
  await pg?.stop();
  await rm(dir, { recursive: true, force: true });
});

for (const engine of ENGINES) {
  describe(`the reconciler and pull counts on ${engine.name}`, engine.options, () => {
    let index: MetadataIndex;
    before(async () => {
      index = await openMetadataIndex(validateConfig({ version: '0.1', storage: { filesystem: { rootdirectory: registry.root } }, metadata: await engine.block() }, 'test'));
      indexes.push(index);
    });

    it('a pass fills the index from storage; the next skips what did not change', async () => {
      const driver = new FilesystemDriver({ rootdirectory: registry.root!, settleMs: 0 });
      const later = () => Date.now() + 60_000;
      assert.equal((await reconcileIndex(driver, index, { storeNow: later })).read, 2);
      assert.equal(await verifyIndex(driver, index, () => undefined), 0);
      assert.equal((await reconcileIndex(driver, index, { storeNow: later })).skipped, 2);
    });

    it('adds the counts of two processes and keeps the latest pull time', async () => {
      const digest = (await index.readRepository('eng/app'))!.manifests[0].digest;
      let now = Date.parse('2026-11-25T10:00:00Z');
      const a = new PullCounts(index.db, () => now);
      const b = new PullCounts(index.db, () => now);
      a.pulled('eng/app', digest);
      a.pulled('eng/app', digest);
      now += 1000;
      b.pulled('eng/app', digest);
      a.pulled('eng/unknown', digest); // no row: counts nothing
      await b.flush();
      await a.flush();
      const row = await index.db.selectFrom('manifests').select(['pull_count', 'last_pulled_at']).where('repository', '=', 'eng/app').where('digest', '=', digest).executeTakeFirstOrThrow();
      assert.deepEqual({ count: Number(row.pull_count), last: row.last_pulled_at }, { count: 3, last: '2026-11-25T10:00:01.000Z' });
      assert.equal(a.size + b.size, 0);
    });
  });
}
