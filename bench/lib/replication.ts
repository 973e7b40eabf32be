/**
 * The replication rows (issue 30): 200 images of 5 layers each (3 shared base layers, 2 of their
 * own), in 10 repositories of 20 tags, pushed into a Distribution; then
 *
 * - pull: `berth replicate run` into an empty root, against `skopeo sync` (docker to docker)
 *   into a running berth on another empty root: wall time of each, and the blobs each root holds;
 * - push: a berth with a push rule into an empty Distribution: the images pushed into berth, and
 *   the time until the last one is on the Distribution.
 *
 * `npm run bench` with BENCH_ONLY=replication runs only these; the figures go into the notes.
 */
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { blobFiles, REPO_ROOT } from '../../test/helpers/berth-process.js';
import { pushBlob } from '../../test/helpers/blobs.js';
import { startReferenceRegistry } from '../../test/helpers/reference-registry.js';
import { filesystemBackend, startBerth } from './registries.js';

const run = promisify(execFile);
const SCHEMA2 = 'application/vnd.docker.distribution.manifest.v2+json';
const KiB = 1024;

export interface ReplicationRow {
  images: number;
  bytes: number;
  berthPullSeconds: number;
  skopeoSyncSeconds: number;
  /** blob files in each root, and whether the two sets (names and sizes) are the same */
  berthBlobs: number;
  skopeoBlobs: number;
  sameBlobs: boolean;
  pushSeconds: number;
  pushReplicatedSeconds: number;
}

interface Fixture {
  repos: string[];
  tags: string[];
  bytes: number;
}

const sha = (data: Buffer) => `sha256:${createHash('sha256').update(data).digest('hex')}`;

/** 10 repositories x `perRepo` tags; base layers shared by every image */
async function pushFixture(base: string, images: number, layerKiB: number): Promise<Fixture> {
  const shared = [0, 1, 2].map(() => randomBytes(layerKiB * KiB));
  for (const layer of shared) await pushBlob(base, 'bench/r0', layer);
  const repos = Array.from({ length: 10 }, (_, i) => `bench/r${i}`);
  const perRepo = Math.ceil(images / repos.length);
  const tags = Array.from({ length: perRepo }, (_, i) => `v${i}`);
  let bytes = shared.reduce((n, b) => n + b.length, 0);
  const jobs = repos.flatMap((repo) => tags.map((tag) => ({ repo, tag })));
  const work = async ({ repo, tag }: { repo: string; tag: string }) => {
    const own = [randomBytes(layerKiB * KiB / 4), randomBytes(layerKiB * KiB / 4)];
    const config = Buffer.from(JSON.stringify({ architecture: 'amd64', os: 'linux', rootfs: { type: 'layers', diff_ids: [...shared, ...own].map(sha) }, config: { Labels: { tag, repo } } }));
    for (const blob of [...shared, ...own, config]) {
      const res = await pushBlob(base, repo, blob);
      if (res.status !== 201) throw new Error(`fixture blob push answered ${res.status}`);
    }
    bytes += own[0].length + own[1].length + config.length;
    const manifest = Buffer.from(JSON.stringify({
      schemaVersion: 2,
      mediaType: SCHEMA2,
      config: { mediaType: 'application/vnd.docker.container.image.v1+json', digest: sha(config), size: config.length },
      layers: [...shared, ...own].map((layer) => ({ mediaType: 'application/vnd.docker.image.rootfs.diff.tar.gzip', digest: sha(layer), size: layer.length })),
    }));
    const res = await fetch(`${base}/v2/${repo}/manifests/${tag}`, { method: 'PUT', body: manifest, headers: { 'content-type': SCHEMA2 } });
    if (res.status !== 201) throw new Error(`fixture manifest push answered ${res.status}`);
  };
  for (let i = 0; i < jobs.length; i += 8) await Promise.all(jobs.slice(i, i + 8).map(work));
  return { repos, tags, bytes };
}

async function blobSet(root: string): Promise<string[]> {
  const dir = join(root, 'docker/registry/v2/blobs');
  return Promise.all((await blobFiles(root)).map(async (file) => `${file} ${(await stat(join(dir, file))).size}`));
}

async function timed(fn: () => Promise<unknown>): Promise<number> {
  const started = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - started) / 1e9;
}

export async function measureReplication(work: string, cli: string | undefined, images: number, layerKiB: number, log: (line: string) => void): Promise<ReplicationRow> {
  const roots = Object.fromEntries(['source', 'pulled', 'synced', 'pushed', 'dr'].map((name) => [name, join(work, `replication-${name}`)]));
  for (const root of Object.values(roots)) await mkdir(root, { recursive: true });
  const berthArgs = cli ? [cli] : ['--import', 'tsx', 'src/cli.ts'];
  const source = await startReferenceRegistry({ rootdirectory: roots.source });
  const stops: (() => Promise<void>)[] = [() => source.stop()];
  try {
    log(`replication: pushing ${images} images into Distribution`);
    const fixture = await pushFixture(source.url, images, layerKiB);

    // pull: berth replicate run into an empty root
    const config = join(work, 'replication-pull.yml');
    await writeFile(config, stringify({ version: '0.1', log: { level: 'warn' }, storage: { filesystem: { rootdirectory: roots.pulled } }, replication: [{ name: 'bench', pull: { url: source.url }, repositories: ['bench/**'] }] }));
    log('replication: berth replicate run');
    const berthPullSeconds = await timed(() => run(process.execPath, [...berthArgs, 'replicate', 'run', 'bench', config], { cwd: REPO_ROOT, maxBuffer: 16 * 1024 * 1024 }));

    // skopeo sync into a running berth on another empty root
    const target = await startBerth(filesystemBackend(roots.synced), cli);
    stops.push(() => target.stop());
    log('replication: skopeo sync');
    const skopeoSyncSeconds = await timed(async () => {
      for (const repo of fixture.repos) {
        await run('skopeo', ['sync', '--src', 'docker', '--dest', 'docker', '--src-tls-verify=false', '--dest-tls-verify=false', '--preserve-digests', `${new URL(source.url).host}/${repo}`, `${target.host}/bench`], { maxBuffer: 64 * 1024 * 1024 });
      }
    });
    const [pulled, synced] = await Promise.all([blobSet(roots.pulled), blobSet(roots.synced)]);

    // push: a berth with a push rule into an empty Distribution
    const dr = await startReferenceRegistry({ rootdirectory: roots.dr });
    stops.push(() => dr.stop());
    const pusher = await startBerth(filesystemBackend(roots.pushed), cli, { config: { replication: [{ name: 'dr', push: { url: dr.url }, repositories: ['bench/**'] }] } });
    stops.push(() => pusher.stop());
    log('replication: pushing into berth with a push rule');
    const started = process.hrtime.bigint();
    const pushSeconds = await timed(async () => {
      for (const repo of fixture.repos) {
        await run('skopeo', ['sync', '--src', 'docker', '--dest', 'docker', '--src-tls-verify=false', '--dest-tls-verify=false', '--preserve-digests', `${new URL(source.url).host}/${repo}`, `${pusher.host}/bench`], { maxBuffer: 64 * 1024 * 1024 });
      }
    });
    const last = `${dr.url}/v2/${fixture.repos.at(-1)}/manifests/${fixture.tags.at(-1)}`;
    for (;;) {
      const res = await fetch(last, { method: 'HEAD', headers: { accept: SCHEMA2 } });
      if (res.status === 200) break;
      if (Number(process.hrtime.bigint() - started) / 1e9 > 1800) throw new Error('push replication did not finish within 30 minutes');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const pushReplicatedSeconds = Number(process.hrtime.bigint() - started) / 1e9;
    return {
      images: fixture.repos.length * fixture.tags.length,
      bytes: fixture.bytes,
      berthPullSeconds,
      skopeoSyncSeconds,
      berthBlobs: pulled.length,
      skopeoBlobs: synced.length,
      sameBlobs: pulled.join('\n') === synced.join('\n'),
      pushSeconds,
      pushReplicatedSeconds,
    };
  } finally {
    for (const stop of stops.reverse()) await stop().catch(() => undefined);
  }
}

/** the rows as lines for the report's notes */
export function renderReplication(row: ReplicationRow): string[] {
  const mib = (row.bytes / 1024 / 1024).toFixed(1);
  return [
    `replication (pull): ${row.images} images of 5 layers (3 shared), ${mib} MiB, from Distribution into an empty berth root: \`berth replicate run\` ${row.berthPullSeconds.toFixed(2)} s, \`skopeo sync\` into berth ${row.skopeoSyncSeconds.toFixed(2)} s (${(row.skopeoSyncSeconds / row.berthPullSeconds).toFixed(2)}x); blobs stored: ${row.berthBlobs} and ${row.skopeoBlobs}, ${row.sameBlobs ? 'the same files and sizes' : 'NOT the same'}.`,
    `replication (push): the same images pushed into berth (skopeo sync, ${row.pushSeconds.toFixed(2)} s) with a push rule into an empty Distribution: the last one there ${row.pushReplicatedSeconds.toFixed(2)} s after the first push.`,
  ];
}
