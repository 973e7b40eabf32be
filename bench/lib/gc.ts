/**
 * The garbage-collection row: offline collection of one storage root by Distribution's
 * `docker-registry garbage-collect` and by `berth garbage-collect`, each on its own fresh copy,
 * timed as a whole process with its peak RSS (GNU time). The root is written straight to disk in
 * Distribution's layout: `repositories` repositories of three images each (config, a layer of
 * their own and a base layer every image shares), a third of the images deleted as a manifest
 * DELETE leaves them (blobs and layer links stay, revision and tag go).
 */
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);
const V2 = 'docker/registry/v2';
const sha = (data: Buffer) => `sha256:${createHash('sha256').update(data).digest('hex')}`;
const hex = (digest: string) => digest.slice(7);

export interface GcRun {
  seconds: number;
  peakRssKiB: number;
  /** blobs left under blobs/ afterwards: both must agree */
  blobsLeft: number;
}

export interface GcRow {
  repositories: number;
  images: number;
  deleted: number;
  blobs: number;
  berth: GcRun[];
  distribution: GcRun[];
}

async function put(root: string, path: string, data: Buffer | string): Promise<void> {
  const file = join(root, V2, path);
  await mkdir(join(file, '..'), { recursive: true });
  await writeFile(file, data);
}

async function blob(root: string, data: Buffer): Promise<string> {
  const digest = sha(data);
  await put(root, `blobs/sha256/${hex(digest).slice(0, 2)}/${hex(digest)}/data`, data);
  return digest;
}

/** writes the fixture; returns how many images and blobs it holds */
export async function writeGcFixture(root: string, repositories: number): Promise<{ images: number; deleted: number; blobs: number }> {
  const base = await blob(root, randomBytes(512));
  let images = 0;
  let deleted = 0;
  let blobs = 1;
  for (let r = 0; r < repositories; r++) {
    const repo = `bench/gc/r${String(r).padStart(5, '0')}`;
    const writes: Promise<unknown>[] = [];
    for (let i = 0; i < 3; i++) {
      const config = await blob(root, Buffer.from(JSON.stringify({ architecture: 'amd64', os: 'linux', rootfs: { type: 'layers', diff_ids: [] }, nonce: randomBytes(8).toString('hex') })));
      const own = await blob(root, randomBytes(256));
      const layer = (digest: string, size: number) => ({ mediaType: 'application/vnd.docker.image.rootfs.diff.tar.gzip', size, digest });
      const manifest = Buffer.from(
        JSON.stringify({
          schemaVersion: 2,
          mediaType: 'application/vnd.docker.distribution.manifest.v2+json',
          config: { mediaType: 'application/vnd.docker.container.image.v1+json', size: 100, digest: config },
          layers: [layer(base, 512), layer(own, 256)],
        }),
      );
      const digest = await blob(root, manifest);
      blobs += 3;
      images++;
      for (const d of [config, own, base]) writes.push(put(root, `repositories/${repo}/_layers/sha256/${hex(d)}/link`, d));
      if (i === 2) {
        deleted++; // deleted through the API: no revision link, no tag
        continue;
      }
      writes.push(put(root, `repositories/${repo}/_manifests/revisions/sha256/${hex(digest)}/link`, digest));
      writes.push(put(root, `repositories/${repo}/_manifests/tags/v${i}/current/link`, digest));
      writes.push(put(root, `repositories/${repo}/_manifests/tags/v${i}/index/sha256/${hex(digest)}/link`, digest));
    }
    await Promise.all(writes);
  }
  return { images, deleted, blobs };
}

async function countBlobs(root: string): Promise<number> {
  let n = 0;
  for (const prefix of await readdir(join(root, V2, 'blobs/sha256'))) {
    for (const name of await readdir(join(root, V2, 'blobs/sha256', prefix))) {
      const inside: string[] = await readdir(join(root, V2, "blobs/sha256", prefix, name)).catch(() => []);
      if (inside.includes('data')) n++;
    }
  }
  return n;
}

/** one collection of a fresh copy of `template` by `who`, under GNU time */
export async function collectOnce(who: 'berth' | 'distribution', template: string, work: string, cli: string): Promise<GcRun> {
  const root = join(work, `${who}-${randomBytes(4).toString('hex')}`);
  await run('cp', ['-a', template, root]);
  const config = join(work, `${who}.yml`);
  await writeFile(
    config,
    `version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: ${root}\n  maintenance:\n    readonly:\n      enabled: ${who === 'berth'}\n`,
  );
  const command = who === 'berth' ? [process.execPath, cli, 'garbage-collect', '--quiet', config] : ['/usr/bin/docker-registry', 'garbage-collect', config];
  const { stderr } = await run('/usr/bin/time', ['-f', 'BENCH-TIME %e %M', ...command], { maxBuffer: 256 * 1024 * 1024, env: { ...process.env, AWS_CA_BUNDLE: '' } });
  const [, seconds, rss] = /BENCH-TIME ([\d.]+) (\d+)/.exec(stderr) ?? [];
  const blobsLeft = await countBlobs(root);
  await run('rm', ['-rf', root]);
  return { seconds: Number(seconds), peakRssKiB: Number(rss), blobsLeft };
}

export async function measureGc(work: string, cli: string, repositories: number, rounds: number, log: (line: string) => void): Promise<GcRow> {
  const template = join(work, 'gc-template');
  log(`garbage collection: writing ${repositories} repositories`);
  const fixture = await writeGcFixture(template, repositories);
  const row: GcRow = { repositories, ...fixture, berth: [], distribution: [] };
  for (let round = 0; round < rounds; round++) {
    for (const who of round % 2 === 0 ? (['berth', 'distribution'] as const) : (['distribution', 'berth'] as const)) {
      const result = await collectOnce(who, template, work, cli);
      log(`garbage collection ${who}: ${result.seconds} s, peak RSS ${(result.peakRssKiB / 1024).toFixed(0)} MiB, ${result.blobsLeft} blobs left`);
      row[who].push(result);
    }
  }
  return row;
}
