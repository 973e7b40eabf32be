/**
 * The row `s3-ha-8x`: berth behind HAProxy (test/helpers/haproxy.ts, round robin), one instance
 * against two on the same S3 prefix, with the same load: eight monolithic pushes and eight
 * streamed pulls of different blobs, all sixteen at once. Both setups go through the balancer, so
 * the factor is what the second instance adds. On a two-core machine the store, the balancer and
 * the load generator share the cores with the registries: the factor is a floor, not what two
 * machines would give.
 */
import type { PatternBlob } from '../../test/helpers/berth-process.js';
import { startHaproxy, type Balancer } from '../../test/helpers/haproxy.js';
import { pullBlob, pushMonolithic } from './http.js';
import { cpuSeconds, settle } from './process-stats.js';
import { s3Backend, startBerth, type Registry, type StartOptions } from './registries.js';
import type { S3Store } from './s3.js';
import { MiB } from './stats.js';

export const SCALING_ID = 's3-ha-8x';

export interface ScalingSample {
  mibps: number;
  seconds: number;
  /** CPU seconds of the berth instances together */
  cpu: number;
}

export interface ScalingRow {
  /** blobs pushed (and as many pulled) per run, and their size */
  blobs: number;
  blobBytes: number;
  one: ScalingSample[];
  two: ScalingSample[];
  error?: string;
}

const PULL_REPO = 'bench/scale/pull';

export async function measureScaling(
  store: S3Store,
  cli: string | undefined,
  blobs: { pushed: PatternBlob[]; pulled: PatternBlob[] },
  rounds: number,
  options: StartOptions,
  log: (line: string) => void,
): Promise<ScalingRow> {
  const row: ScalingRow = { blobs: blobs.pushed.length, blobBytes: blobs.pushed[0].size, one: [], two: [] };
  const prefix = store.prefix('berth-scale');
  const backend = s3Backend(store, prefix, false);
  const instances: Registry[] = [];
  const balancers: Balancer[] = [];
  try {
    for (let i = 0; i < 2; i++) instances.push(await startBerth(backend, cli, options));
    balancers.push(await startHaproxy([instances[0].url]), await startHaproxy(instances.map((r) => r.url)));
    const [one, two] = balancers;
    log(`${SCALING_ID}: berth ${instances.map((r) => `${r.url} (pid ${r.pid})`).join(', ')}; HAProxy ${one.url} -> first, ${two.url} -> both`);
    for (const blob of blobs.pulled) await pushMonolithic(two.url, PULL_REPO, blob);
    for (let round = 0; round < rounds; round++) {
      const order: [string, Balancer, ScalingSample[]][] = [
        ['one instance', one, row.one],
        ['two instances', two, row.two],
      ];
      if (round % 2 === 1) order.reverse();
      for (const [what, balancer, samples] of order) {
        for (const r of instances) await settle(r.pid);
        const repo = (i: number) => `bench/scale/push-r${round}-${samples.length}-${i}`;
        const cpu0 = instances.reduce((n, r) => n + cpuSeconds(r.pid), 0);
        const t0 = performance.now();
        await Promise.all([
          ...blobs.pushed.map((blob, i) => pushMonolithic(balancer.url, repo(i), blob)),
          ...blobs.pulled.map((blob) => pullBlob(balancer.url, PULL_REPO, blob.digest(), blob.size)),
        ]);
        const ms = performance.now() - t0;
        const cpu = instances.reduce((n, r) => n + cpuSeconds(r.pid), 0) - cpu0;
        const bytes = [...blobs.pushed, ...blobs.pulled].reduce((n, b) => n + b.size, 0);
        samples.push({ mibps: bytes / MiB / (ms / 1000), seconds: ms / 1000, cpu });
        log(`${SCALING_ID} round ${round + 1}/${rounds} ${what}: ${samples.at(-1)!.mibps.toFixed(1)} MiB/s, ${cpu.toFixed(2)} CPU s`);
        for (const [i, blob] of blobs.pushed.entries()) await prefix.removePushed(repo(i), [blob.digest()]);
        await store.reclaim();
      }
    }
  } catch (err) {
    row.error = err instanceof Error ? err.message : String(err);
    log(`${SCALING_ID} FAILED: ${row.error}`);
  } finally {
    for (const b of balancers) await b.stop().catch(() => undefined);
    await Promise.allSettled(instances.map((r) => r.stop()));
  }
  return row;
}

/** the section of the results page */
export function renderScaling(lines: string[], row: ScalingRow): void {
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
  const one = row.one.length ? median(row.one.map((s) => s.mibps)) : undefined;
  const two = row.two.length ? median(row.two.map((s) => s.mibps)) : undefined;
  const cpu = (samples: ScalingSample[]) => (samples.length ? median(samples.map((s) => s.cpu)).toFixed(2) : '–');
  lines.push('');
  lines.push(`## Several instances behind HAProxy (${SCALING_ID})`);
  lines.push('');
  lines.push(
    `${row.blobs} monolithic pushes and ${row.blobs} streamed pulls of different ${Math.round(row.blobBytes / MiB)} MiB blobs at once, through HAProxy ` +
      `(round robin) to one berth instance, then to two on the same S3 prefix; ${Math.max(row.one.length, row.two.length)} round(s), alternating. ` +
      'Ceph, HAProxy, the load generator and the instances share the two cores: the factor is what a second process gets out of the same two cores, ' +
      'not what a second machine would add.',
  );
  lines.push('');
  if (row.error) lines.push(`**Failed: ${row.error}**`, '');
  lines.push('| instances | MiB/s (median, pushed + pulled) | berth CPU s (all instances) |');
  lines.push('|---|---|---|');
  lines.push(`| 1 | ${one?.toFixed(1) ?? '–'} | ${cpu(row.one)} |`);
  lines.push(`| 2 | ${two?.toFixed(1) ?? '–'} | ${cpu(row.two)} |`);
  lines.push(`| scaling factor | **${one && two ? (two / one).toFixed(2) : '–'}×** | |`);
}
