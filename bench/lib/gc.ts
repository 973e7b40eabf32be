/**
 * The garbage-collection row: offline collection of one storage root by Distribution's
 * `docker-registry garbage-collect` and by `berth garbage-collect`, each on its own fresh copy,
 * timed as a whole process with its peak RSS (GNU time). The root: test/helpers/gc-fixture.ts.
 * And the scale row (gc-scale): berth alone on 1,000 and 10,000 repositories, where memory must
 * follow the digests kept, not the bytes (it was a test of 163 s until issue 27).
 */
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { countBlobs, writeGcFixture } from '../../test/helpers/gc-fixture.js';

const run = promisify(execFile);

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

export interface GcScaleRun {
  repositories: number;
  blobs: number;
  seconds: number;
  peakRssKiB: number;
  /** blobs left; each deleted image leaves its config, its own layer and its manifest: 3 per repository */
  blobsLeft: number;
  blobsExpected: number;
}

/** `berth garbage-collect` once on a root of each size in `sizes` (repositories) */
export async function measureGcScale(work: string, cli: string, sizes: number[], log: (line: string) => void): Promise<GcScaleRun[]> {
  const runs: GcScaleRun[] = [];
  for (const repositories of sizes) {
    const template = join(work, `gc-scale-${repositories}`);
    log(`garbage collection at scale: writing ${repositories} repositories`);
    const fixture = await writeGcFixture(template, repositories);
    const result = await collectOnce('berth', template, work, cli);
    await run('rm', ['-rf', template]);
    const blobsExpected = fixture.blobs - repositories * 3;
    log(`garbage collection at scale, ${repositories} repositories: ${result.seconds} s, peak RSS ${(result.peakRssKiB / 1024).toFixed(0)} MiB, ${result.blobsLeft} blobs left (${blobsExpected} expected)`);
    runs.push({ repositories, blobs: fixture.blobs, ...result, blobsExpected });
  }
  return runs;
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
