/**
 * `npx tsx bench/index-rebuild.ts [MANIFESTS] [ENGINE]`: how fast `berth index rebuild` reads the
 * filesystem. Writes MANIFESTS image manifests (default 20,000; one tag each, 10 per repository,
 * a config and a shared layer) into a temp root through the core without an index, then rebuilds
 * a fresh SQLite index (ENGINE `sqlite`, default) or the PostgreSQL database of $BERTH_BENCH_PG_URL
 * and prints manifests/s, and the CPU seconds of the process and of its main thread (Linux: /proc).
 * The walk runs with a cold index and the page cache warm (the files were just written).
 */
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openMetadataIndex } from '../src/features/metadata.js';
import { BlobStore } from '../src/registry/blobs.js';
import { digestBytes, type Digest } from '../src/registry/digest.js';
import { readRepositoryFacts } from '../src/registry/indexing/facts.js';
import { rebuildIndex, REBUILD_REPOSITORIES } from '../src/registry/indexing/rebuild.js';
import { repositoryNames } from '../src/registry/gc/repositories.js';
import * as layout from '../src/registry/layout.js';
import { ManifestStore } from '../src/registry/manifest-store.js';
import { forEach } from '../src/registry/pool.js';
import { TagStore } from '../src/registry/tags.js';
import { FilesystemDriver } from '../src/storage/filesystem.js';
import { mainThreadCpuSeconds } from './lib/process-stats.js';

const count = Number(process.argv[2] ?? 20_000);
const engine = process.argv[3] ?? 'sqlite';
const root = await mkdtemp(join(tmpdir(), 'berth-bench-index-'));
try {
  const driver = new FilesystemDriver({ rootdirectory: root });
  const blobs = new BlobStore(driver);
  const tags = new TagStore(driver);
  const manifests = new ManifestStore(driver, blobs, tags, {});
  const layer = randomBytes(1024);
  const layerDigest = digestBytes('sha256', layer) as Digest;
  await driver.putContent(layout.blobData(layerDigest), layer);
  const started = performance.now();
  await forEach(
    Array.from({ length: count }, (_, i) => i),
    16,
    async (i) => {
      const name = `bench/repo-${Math.floor(i / 10)}`;
      const config = Buffer.from(JSON.stringify({ architecture: 'amd64', os: 'linux', config: { Labels: { n: String(i) } }, rootfs: { type: 'layers', diff_ids: [layerDigest] } }));
      const configDigest = digestBytes('sha256', config) as Digest;
      await driver.putContent(layout.blobData(configDigest), config);
      await blobs.link(name, configDigest);
      await blobs.link(name, layerDigest);
      const manifest = {
        schemaVersion: 2,
        mediaType: 'application/vnd.oci.image.manifest.v1+json',
        config: { mediaType: 'application/vnd.oci.image.config.v1+json', digest: configDigest, size: config.length },
        layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip', digest: layerDigest, size: layer.length }],
      };
      await manifests.put(name, { tag: `t${i % 10}` }, manifest.mediaType, Buffer.from(JSON.stringify(manifest)));
    },
  );
  console.log(`wrote ${count} manifests in ${((performance.now() - started) / 1000).toFixed(1)} s`);
  const metadata = engine === 'sqlite' ? { sqlite: { path: join(root, 'index.sqlite') } } : { postgres: { url: process.env.BERTH_BENCH_PG_URL! } };
  const index = await openMetadataIndex({ storage: {}, metadata: { enabled: true, ...metadata } });
  // the storage walk alone, then the whole rebuild: the difference is the database's share
  const walk0 = performance.now();
  const names: string[] = [];
  for await (const name of repositoryNames(driver)) names.push(name);
  await forEach(names, REBUILD_REPOSITORIES, async (name) => {
    await readRepositoryFacts(driver, name);
  });
  console.log(`walked storage in ${((performance.now() - walk0) / 1000).toFixed(1)} s: ${Math.round(count / ((performance.now() - walk0) / 1000))} manifests/s`);
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  const main0 = mainThreadCpuSeconds();
  const summary = await rebuildIndex(driver, index);
  const seconds = (performance.now() - t0) / 1000;
  // the main thread's CPU bounds the throughput on a quiet machine (it runs the JavaScript and SQLite); wall time follows the load
  const main = mainThreadCpuSeconds() - main0;
  const { user, system } = process.cpuUsage(cpu0);
  console.log(`rebuilt ${summary.repositories} repositories, ${summary.manifests} manifests, ${summary.tags} tags on ${engine} in ${seconds.toFixed(1)} s: ${Math.round(summary.manifests / seconds)} manifests/s`);
  console.log(`CPU: ${((user + system) / 1e6).toFixed(1)} s in all, ${main.toFixed(1)} s on the main thread (${((main / summary.manifests) * 1000).toFixed(3)} s per 1,000 manifests)`);
  await index.close();
} finally {
  await rm(root, { recursive: true, force: true });
}
