/**
 * The scale data set of the index rows (bench/lib/index-scale.ts): 100,000 repositories holding
 * 1,000,000 tags, one of them (`team-00/big`) with 100,000, written straight into Distribution's
 * storage layout (src/registry/layout.ts) rather than pushed: per tag its `current/link`, per
 * repository the revision links and `_layers` links of the images its tags name. The tags name a
 * handful of shared images (IMAGES), whose blobs are written once.
 *
 * Left out: the tags' `index/sha256/<hex>/link` (the digests a tag ever named), which only tag and
 * manifest deletion read, nothing measured here. On ext4 every directory and small file takes a
 * 4 KiB block: with them a tag costs 7 inodes and 28 KiB, without 3 and 12 KiB, and the full set
 * 22 GB of disk instead of 40.
 *
 * Repositories are `team-NN/app-NNNNN` (100 top-level namespaces of 1,000), the usage row asks
 * for one namespace. On a filesystem the objects go through worker threads making plain
 * synchronous fs calls, one repository per batch; on S3 through signed PUTs (s3-put.ts), many in flight.
 */
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { Worker } from 'node:worker_threads';
import * as layout from '../../src/registry/layout.js';
import type { Digest } from '../../src/registry/digest.js';
import { cpuSeconds } from './process-stats.js';
import type { S3Prefix, S3Store } from './s3.js';
import { SignedPut } from './s3-put.js';

export interface ScaleSpec {
  repositories: number;
  tags: number;
  /** tags of the one big repository (BIG_REPO); the others share the rest evenly */
  bigTags: number;
}

export const FULL_SCALE: ScaleSpec = { repositories: 100_000, tags: 1_000_000, bigTags: 100_000 };

/** images the tags name (each a config of its own and one layer all share) */
export const IMAGES = 4;
export const NAMESPACES = 100;
export const BIG_REPO = 'team-00/big';

/** what the rows need to know about a written set */
export interface ScaleSet {
  spec: ScaleSpec;
  /** every repository name, sorted by code unit (as the catalog lists them) */
  repositories: string[];
  big: string;
  /** the big repository's tags, sorted */
  bigTags: string[];
  /** revision links written (manifests the index holds after a rebuild) */
  manifests: number;
  /** a top-level namespace for the usage row, and a term for the search row (a prefix of repository names) */
  namespace: string;
  search: string;
  /** seconds the writing took; undefined when the set was reused from BENCH_SCALE_DIR */
  writeSeconds?: number;
  /** CPU seconds the writing took (S3) */
  writeCpu?: WriteCpu;
  /** objects (files or S3 objects) written */
  objects: number;
  /** where it is: a filesystem root or an S3 key prefix */
  where: string;
}

interface Image {
  manifest: Buffer;
  digest: Digest;
  blobs: { digest: Digest; data: Buffer }[];
}

const sha256 = (data: Buffer): Digest => `sha256:${createHash('sha256').update(data).digest('hex')}` as Digest;

function images(): Image[] {
  const shared = randomBytes(2048);
  return Array.from({ length: IMAGES }, (_, i) => {
    const config = Buffer.from(
      JSON.stringify({ architecture: i % 2 ? 'arm64' : 'amd64', os: 'linux', config: { Labels: { 'org.opencontainers.image.title': `bench image ${i}`, 'bench.image': String(i) } }, rootfs: { type: 'layers', diff_ids: [sha256(shared)] } }),
    );
    const blobs = [config, shared].map((data) => ({ data, digest: sha256(data) }));
    const manifest = Buffer.from(
      JSON.stringify({
        schemaVersion: 2,
        mediaType: 'application/vnd.oci.image.manifest.v1+json',
        config: { mediaType: 'application/vnd.oci.image.config.v1+json', digest: blobs[0].digest, size: config.length },
        layers: blobs.slice(1).map((b) => ({ mediaType: 'application/vnd.oci.image.layer.v1.tar', digest: b.digest, size: b.data.length })),
      }),
    );
    return { manifest, digest: sha256(manifest), blobs };
  });
}

interface PlannedRepository {
  index: number;
  name: string;
  tags: string[];
}

const pad = (n: number, width: number) => String(n).padStart(width, '0');

/** the repositories and their tags, in writing order (the big one first: it takes longest) */
function plan(spec: ScaleSpec): PlannedRepository[] {
  const small = spec.repositories - 1;
  const each = Math.floor((spec.tags - spec.bigTags) / small);
  const extra = spec.tags - spec.bigTags - each * small;
  const width = String(spec.bigTags - 1).length;
  const out: PlannedRepository[] = [{ index: 0, name: BIG_REPO, tags: Array.from({ length: spec.bigTags }, (_, i) => `v${pad(i, width)}`) }];
  for (let r = 1; r <= small; r++) {
    const count = each + (r <= extra ? 1 : 0);
    out.push({ index: r, name: `team-${pad(r % NAMESPACES, 2)}/app-${pad(r, 6)}`, tags: Array.from({ length: count }, (_, i) => `t${pad(i, 2)}`) });
  }
  return out;
}

/** the storage objects of one repository: [path under the root, content] */
function repositoryObjects(repo: PlannedRepository, all: Image[]): [string, string][] {
  const objects: [string, string][] = [];
  const used = new Set<Image>();
  repo.tags.forEach((tag, i) => {
    const image = all[(i + repo.index) % all.length];
    used.add(image);
    objects.push([layout.tagCurrentLink(repo.name, tag), image.digest]);
  });
  const linked = new Set<Digest>();
  for (const image of used) {
    objects.push([layout.manifestRevisionLink(repo.name, image.digest), image.digest]);
    for (const blob of image.blobs) linked.add(blob.digest);
  }
  for (const digest of linked) objects.push([layout.layerLink(repo.name, digest), digest]);
  return objects;
}

const byCodeUnit = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);

function describe(spec: ScaleSpec, planned: PlannedRepository[], where: string, objects: number, writeSeconds?: number): ScaleSet {
  const big = planned[0];
  return {
    spec,
    repositories: planned.map((r) => r.name).sort(byCodeUnit),
    big: big.name,
    bigTags: [...big.tags].sort(byCodeUnit),
    manifests: planned.reduce((n, r) => n + Math.min(r.tags.length, IMAGES), 0),
    namespace: 'team-07',
    // search matches the start of a name or value (src/metadata/search.ts): the namespace's
    // repositories numbered below 10,000, 20 of them at the smallest set, 100 from a tenth up
    search: 'team-07/app-00',
    writeSeconds,
    objects,
    where,
  };
}

/**
 * The worker: plain JavaScript (no loader needed), synchronous fs calls, one repository's
 * objects per message; directories it made are remembered so each is made once.
 */
const WORKER = `
const { parentPort, workerData } = require('node:worker_threads');
const { mkdirSync, writeFileSync } = require('node:fs');
const { dirname } = require('node:path');
const made = new Set();
parentPort.on('message', (objects) => {
  for (const [path, data] of objects) {
    const file = workerData.root + path;
    const dir = dirname(file);
    if (!made.has(dir)) { mkdirSync(dir, { recursive: true }); made.add(dir); }
    writeFileSync(file, data);
  }
  made.clear();
  parentPort.postMessage(objects.length);
});
`;

/** a marker file: the set under the root is complete and of this spec */
const MARKER = 'bench-scale.json';

/**
 * The set in a filesystem root: reused when `root` holds a complete set of the same spec
 * (BENCH_SCALE_DIR keeps it between runs), otherwise written from scratch (`root` must not exist
 * or be empty).
 */
export async function writeFilesystemSet(root: string, spec: ScaleSpec, log: (line: string) => void): Promise<ScaleSet> {
  const planned = plan(spec);
  const marker = join(root, MARKER);
  if (existsSync(marker)) {
    const saved = JSON.parse(await readFile(marker, 'utf8')) as { spec: ScaleSpec; objects: number };
    if (JSON.stringify(saved.spec) === JSON.stringify(spec)) {
      log(`scale set: reusing ${root} (${saved.objects} files)`);
      return describe(spec, planned, root, saved.objects);
    }
    throw new Error(`${root} holds a scale set of another size (${JSON.stringify(saved.spec)}): remove it or choose another BENCH_SCALE_DIR`);
  }
  const started = performance.now();
  const all = images();
  let objects = 0;
  for (const image of all) {
    for (const { digest, data } of [...image.blobs, { digest: image.digest, data: image.manifest }]) {
      const file = join(root, layout.blobData(digest));
      await mkdir(dirname(file), { recursive: true });
      await writeFile(file, data);
      objects++;
    }
  }
  // the syscalls block their thread: a few more threads than cores keep the disk and the cores busy
  const count = Math.max(2, cpus().length * 2);
  const workers = Array.from({ length: count }, () => new Worker(WORKER, { eval: true, workerData: { root } }));
  try {
    let next = 0;
    let done = 0;
    await Promise.all(
      workers.map(
        (worker) =>
          new Promise<void>((resolve, reject) => {
            const send = () => {
              if (next >= planned.length) return resolve();
              worker.postMessage(repositoryObjects(planned[next++], all));
            };
            worker.on('message', (n: number) => {
              objects += n;
              if (++done % 10_000 === 0) log(`scale set: ${done} of ${planned.length} repositories written (${objects} files)`);
              send();
            });
            worker.on('error', reject);
            // a few batches queued per worker, so it never waits for the main thread
            for (let i = 0; i < 4; i++) send();
          }),
      ),
    );
    // the queued batches still running when the last was handed out
    while (done < planned.length) await new Promise((resolve) => setTimeout(resolve, 50));
  } finally {
    await Promise.all(workers.map((w) => w.terminate()));
  }
  const writeSeconds = (performance.now() - started) / 1000;
  await writeFile(marker, JSON.stringify({ spec, objects }));
  log(`scale set: ${objects} files written in ${writeSeconds.toFixed(0)} s`);
  return describe(spec, planned, root, objects, writeSeconds);
}

/** CPU seconds the writing cost: the writing process, and the store's daemons when known */
export interface WriteCpu {
  writer: number;
  /** radosgw and the OSD (their PIDs from the Ceph's run directory) */
  store?: number;
}

/**
 * The set under an S3 key prefix: signed PUTs (s3-put.ts, not the SDK client: it cost the
 * writer more CPU than radosgw spent on the PUT), `concurrency` in flight over as many connections.
 */
export async function writeS3Set(store: S3Store, prefix: S3Prefix, spec: ScaleSpec, concurrency: number, log: (line: string) => void): Promise<ScaleSet> {
  const planned = plan(spec);
  const puts = new SignedPut(store.ceph.endpoint, store.bucket, await prefix.client.config.credentials(), concurrency);
  const daemons = storePids(store);
  const storeCpu = () => daemons?.reduce((sum, pid) => sum + cpuSeconds(pid), 0);
  const [cpuBefore, storeBefore] = [process.cpuUsage(), storeCpu()];
  const started = performance.now();
  const all = images();
  let objects = 0;
  try {
    for (const image of all) {
      for (const { digest, data } of [...image.blobs, { digest: image.digest, data: image.manifest }]) {
        await puts.put(prefix.key(layout.blobData(digest)), data);
        objects++;
      }
    }
    function* each(): Generator<[string, string]> {
      for (const repo of planned) yield* repositoryObjects(repo, all);
    }
    const source = each();
    let lastLog = performance.now();
    await Promise.all(
      Array.from({ length: concurrency }, async () => {
        for (let item = source.next(); !item.done; item = source.next()) {
          await puts.put(prefix.key(item.value[0]), item.value[1]);
          objects++;
          if (performance.now() - lastLog > 30_000) {
            lastLog = performance.now();
            log(`scale set on S3: ${objects} objects, ${Math.round(objects / ((lastLog - started) / 1000))} PUT/s`);
          }
        }
      }),
    );
  } finally {
    await puts.close();
  }
  const writeSeconds = (performance.now() - started) / 1000;
  const used = process.cpuUsage(cpuBefore);
  const writeCpu: WriteCpu = { writer: (used.user + used.system) / 1e6, store: storeBefore === undefined ? undefined : storeCpu()! - storeBefore };
  log(
    `scale set on S3: ${objects} objects written in ${writeSeconds.toFixed(0)} s (${Math.round(objects / writeSeconds)} PUT/s); CPU: the writer ${writeCpu.writer.toFixed(0)} s` +
      `${writeCpu.store === undefined ? '' : `, radosgw and the OSD ${writeCpu.store.toFixed(0)} s`}`,
  );
  return { ...describe(spec, planned, prefix.rootdirectory, objects, writeSeconds), writeCpu };
}

/** the PIDs of the store's radosgw and OSD (test/helpers/ceph-s3.sh records them); undefined when unreadable */
function storePids(store: S3Store): number[] | undefined {
  try {
    return ['rgw', 'osd'].map((name) => Number(readFileSync(join(store.ceph.dir, 'run', `${name}.pid`), 'utf8').trim()));
  } catch {
    return undefined;
  }
}
