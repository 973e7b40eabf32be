/**
 * The pull-through cache rows: berth and Distribution each run as a mirror (`proxy.remoteurl`) of
 * one upstream, a third registry (Distribution, on its own filesystem root), and the mirrors keep
 * their caches on the filesystem. A cold pull is the first pull of content neither mirror holds
 * (each round has content of its own in the upstream, so nothing is cleared between rounds); a warm
 * pull is the same pull again, served from the cache. The runner measures the mirror processes.
 *
 * Content per round: an image of 20 random gzip layers (pulled with skopeo, HEAD and GET as a
 * client does) and one big blob (a GET, counted and dropped).
 */
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { PatternBlob } from '../../test/helpers/berth-process.js';
import type { LayoutImage } from '../../test/helpers/oci-layout.js';
import { linkBlob, writeBlobFile } from './fixtures.js';
import { pullBlob } from './http.js';
import { filesystemBackend, startBerth, startDistribution, type Registry, type RegistryName, type StartOptions } from './registries.js';
import { mibps, skopeo, type Scenario } from './scenarios.js';
import { MiB } from './stats.js';

const LAYERS_REPO = (round: number) => `bench/proxy/layers-r${round}`;
const rowId = (state: 'cold' | 'warm', what: 'layers' | 'big') => `proxy-${state}-${what}`;
/** the rows' ids, known before their content is written (BENCH_ONLY decides whether to write it) */
export const PROXY_ROW_IDS = [rowId('cold', 'layers'), rowId('warm', 'layers'), rowId('cold', 'big'), rowId('warm', 'big')];
const BLOB_REPO = 'bench/proxy/blob';

export interface ProxySettings {
  /** one 20-layer image per round, in OCI layouts */
  images: LayoutImage[];
  /** the bytes of one image's blobs */
  imageBytes: number;
  /** one big blob per round */
  blobs: PatternBlob[];
  work: string;
}

/** the four rows, in the order they must run (a warm row pulls what its cold row fetched) */
export function proxyScenarios(settings: ProxySettings): Scenario[] {
  const rounds = settings.images.length;
  const layers = settings.images[0].blobDigests.length - 1;
  const bigMiB = (settings.blobs[0].size / MiB).toFixed(0);
  const pullImage = (state: 'cold' | 'warm'): Scenario => ({
    id: rowId(state, 'layers'),
    group: 'client',
    storage: 'filesystem',
    title: `pull-through cache, ${state}: skopeo copy mirror -> dir:, ${layers} layers, ${(settings.imageBytes / MiB).toFixed(0)} MiB`,
    unit: 'MiB/s',
    note: state === 'cold' ? 'every byte fetched from the upstream (Distribution) while served; includes starting skopeo' : 'served from the mirror\'s cache; the tag is still checked upstream; includes starting skopeo',
    rounds,
    async run(reg, round) {
      const dir = join(settings.work, `proxy-${state}-${reg.name}-${round}`);
      const t0 = performance.now();
      await skopeo('copy', '--quiet', '--src-tls-verify=false', `docker://${reg.host}/${LAYERS_REPO(round)}:v1`, `dir:${dir}`);
      const ms = performance.now() - t0;
      await rm(dir, { recursive: true, force: true });
      return { throughput: mibps(settings.imageBytes, ms), seconds: ms / 1000 };
    },
  });
  const pullBig = (state: 'cold' | 'warm'): Scenario => ({
    id: rowId(state, 'big'),
    group: 'blob',
    storage: 'filesystem',
    title: `pull-through cache, ${state}: GET one ${bigMiB} MiB blob through the mirror`,
    unit: 'MiB/s',
    note: state === 'cold' ? 'streamed from the upstream while written to the cache' : 'served from the mirror\'s cache',
    rounds,
    async run(reg, round) {
      const blob = settings.blobs[round];
      const ms = await pullBlob(reg.url, BLOB_REPO, blob.digest(), blob.size);
      return { throughput: mibps(blob.size, ms), seconds: ms / 1000 };
    },
  });
  return [pullImage('cold'), pullImage('warm'), pullBig('cold'), pullBig('warm')];
}

export interface ProxyPair {
  mirrors: Record<RegistryName, Registry>;
  upstream: Registry;
  stop(): Promise<void>;
}

/**
 * The upstream with every round's content, and both mirrors of it with empty caches. `cli` is
 * berth's compiled entry point (undefined: from source); `options` as for the other rows.
 */
export async function startProxyPair(settings: ProxySettings, cli: string | undefined, options: Omit<StartOptions, 'config'>): Promise<ProxyPair> {
  const started: Registry[] = [];
  const stop = async () => {
    await Promise.allSettled(started.splice(0).map((r) => r.stop()));
  };
  try {
    const upstreamRoot = join(settings.work, 'proxy-upstream');
    for (const [round, blob] of settings.blobs.entries()) {
      const file = join(settings.work, 'proxy-fixtures', `blob-${round}`);
      await writeBlobFile(file, blob);
      await linkBlob(upstreamRoot, BLOB_REPO, blob.digest(), file);
    }
    const upstream = await startDistribution(filesystemBackend(upstreamRoot));
    started.push(upstream);
    for (const [round, image] of settings.images.entries()) {
      await skopeo('copy', '--quiet', '--dest-tls-verify=false', `oci:${image.dir}:${image.tag}`, `docker://${upstream.host}/${LAYERS_REPO(round)}:v1`);
    }
    const proxy = { proxy: { remoteurl: upstream.url } };
    const berth = await startBerth(filesystemBackend(join(settings.work, 'proxy-berth')), cli, { ...options, config: proxy });
    started.push(berth);
    const distribution = await startDistribution(filesystemBackend(join(settings.work, 'proxy-distribution')), proxy);
    started.push(distribution);
    return { mirrors: { berth, distribution }, upstream, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
