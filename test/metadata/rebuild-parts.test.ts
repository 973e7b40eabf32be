/**
 * A big repository is rebuilt in parts (src/registry/indexing/parts.ts): no transaction replaces
 * more than PART_ROWS rows, so a 100,000-tag repository no longer holds the event loop for
 * seconds. The parts together still make the index what storage holds (tags removed from storage
 * at the start, middle and end of the ranges go, their history closed), and a request-path write
 * landing between two parts is kept: the repository is read again.
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { validateConfig } from '../../src/config/load.js';
import { openMetadataIndex } from '../../src/features/metadata.js';
import type { MetadataIndex, Replacement } from '../../src/metadata/metadata-index.js';
import { PART_ROWS, rebuildIndex } from '../../src/registry/indexing/rebuild.js';
import { verifyIndex } from '../../src/registry/indexing/verify-index.js';
import { tagCurrentLink } from '../../src/registry/layout.js';
import { FilesystemDriver } from '../../src/storage/filesystem.js';
import { startBerth, type Overrides, type TestRegistry } from '../helpers/berth.js';
import { buildImage, pushImageOK, type Image } from '../helpers/images.js';
import { needPostgres, startPostgres, type TestPostgres } from '../helpers/postgres.js';

const BIG = 'big/repo';
const TAGS = PART_ROWS + 100;
const tagName = (i: number) => `t${String(i).padStart(5, '0')}`;

let dir: string;
let counter = 0;
let pg: TestPostgres | undefined;

const ENGINES: { name: string; options: { skip: string | false }; fresh(): Promise<Overrides>; start?(): Promise<void>; stop?(): Promise<void> }[] = [
  { name: 'SQLite', options: { skip: false }, fresh: async () => ({ sqlite: { path: join(dir, `index-${++counter}.sqlite`) } }) },
  {
    name: 'PostgreSQL',
    options: needPostgres(),
    fresh: async () => ({ postgres: { url: await pg!.createDatabase(`parts_${++counter}`) } }),
    start: async () => {
      pg = await startPostgres();
    },
    stop: async () => {
      await pg?.stop();
      pg = undefined;
    },
  },
];

/** a tag's current link written straight into storage (as Distribution's layout holds it) */
async function writeTag(root: string, tag: string, digest: string): Promise<void> {
  const file = join(root, tagCurrentLink(BIG, tag));
  await mkdir(dirname(file), { recursive: true });
  await writeFile(file, digest);
}

/** the records each call of replaceRepositories was given, per call */
function recordingWrites(index: MetadataIndex, onCall?: (batch: readonly Replacement[], call: number) => Promise<void>): number[] {
  const sizes: number[] = [];
  const replace = index.replaceRepositories.bind(index);
  index.replaceRepositories = async (batch) => {
    sizes.push(batch.reduce((n, r) => n + r.facts.manifests.length + r.facts.tags.length + r.facts.blobs.length, 0));
    const result = await replace(batch);
    await onCall?.(batch, sizes.length);
    return result;
  };
  return sizes;
}

async function differences(driver: FilesystemDriver, index: MetadataIndex): Promise<string[]> {
  const lines: string[] = [];
  await verifyIndex(driver, index, (line) => lines.push(line));
  return lines;
}

for (const engine of ENGINES) {
  describe(`a big repository rebuilt in parts on ${engine.name}`, engine.options, () => {
    const registries: TestRegistry[] = [];
    const indexes: MetadataIndex[] = [];
    let root: string;
    let image: Image;
    before(async () => {
      dir = await mkdtemp(join(tmpdir(), 'berth-rebuild-parts-'));
      await engine.start?.();
      const registry = await startBerth({ metadata: { enabled: false } });
      registries.push(registry);
      root = registry.root!;
      image = await pushImageOK(registry.url, BIG, buildImage('oci-manifest'), tagName(0));
      await pushImageOK(registry.url, 'small/repo', buildImage('docker-v2'), 'latest');
      for (let i = 1; i < TAGS; i++) await writeTag(root, tagName(i), image.digest);
    });
    after(async () => {
      for (const index of indexes) await index.close().catch(() => undefined);
      for (const registry of registries) await registry.stop().catch(() => undefined);
      await engine.stop?.();
      await rm(dir, { recursive: true, force: true });
    });
    const freshIndex = async () => {
      const index = await openMetadataIndex(validateConfig({ version: '0.1', storage: { filesystem: { rootdirectory: root } }, metadata: await engine.fresh() }, 'test'));
      indexes.push(index);
      return index;
    };

    it('writes no transaction of more than PART_ROWS rows, and the index holds what storage holds', async () => {
      const driver = new FilesystemDriver({ rootdirectory: root });
      const index = await freshIndex();
      const sizes = recordingWrites(index);
      const summary = await rebuildIndex(driver, index);
      assert.equal(summary.tags, TAGS + 1);
      assert.ok(Math.max(...sizes) <= PART_ROWS, `the largest transaction wrote ${Math.max(...sizes)} rows`);
      assert.ok(sizes.length >= 3, 'the big repository took several transactions');
      assert.deepEqual(await differences(driver, index), []);
      assert.equal((await index.readRepository(BIG))?.tags.length, TAGS);
    });

    it('removes tags gone from storage in every part, and closes their history', async () => {
      const driver = new FilesystemDriver({ rootdirectory: root });
      const index = await freshIndex();
      await rebuildIndex(driver, index);
      // gone: the first tag, one at the parts' boundary, one in the middle, the last
      const gone = [tagName(1), tagName(PART_ROWS - 1), tagName(PART_ROWS), tagName(PART_ROWS + 50), tagName(TAGS - 1)];
      for (const tag of gone) await rm(join(root, dirname(dirname(tagCurrentLink(BIG, tag)))), { recursive: true });
      try {
        await rebuildIndex(driver, index);
        assert.deepEqual(await differences(driver, index), []);
        const tags = new Set((await index.readRepository(BIG))?.tags.map((t) => t.name));
        assert.equal(tags.size, TAGS - gone.length);
        for (const tag of gone) {
          assert.ok(!tags.has(tag), tag);
          const history = await index.tagHistory(BIG, tag);
          assert.ok(history.length > 0 && history.every((h) => h.to !== null), `${tag}'s history is closed`);
        }
      } finally {
        for (const tag of gone) await writeTag(root, tag, image.digest);
      }
    });

    it('keeps a push that lands between two parts: the repository is read again', async () => {
      const driver = new FilesystemDriver({ rootdirectory: root });
      const index = await freshIndex();
      const pushed = 'zz-pushed-meanwhile';
      let landed = false;
      recordingWrites(index, async (batch) => {
        if (landed || !batch[0].part?.tags) return;
        landed = true;
        // the request path: storage first, then the index
        await writeTag(root, pushed, image.digest);
        await index.tagMoved(BIG, pushed, image.digest);
      });
      try {
        await rebuildIndex(driver, index);
        assert.ok(landed);
        assert.deepEqual(await differences(driver, index), []);
        assert.ok((await index.readRepository(BIG))?.tags.some((t) => t.name === pushed));
      } finally {
        await rm(join(root, dirname(dirname(tagCurrentLink(BIG, pushed)))), { recursive: true });
      }
    });
  });
}
