/**
 * The scenarios: each runs once per registry per round and answers a throughput (and latencies
 * where they apply). The runner (bench/run.ts) measures the registry process around `run` and calls
 * `cleanup` afterwards, outside the measurement.
 */
import { execFile } from 'node:child_process';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import autocannon from 'autocannon';
import type { PatternBlob } from '../../test/helpers/berth-process.js';
import type { LayoutImage } from '../../test/helpers/oci-layout.js';
import { CATALOG_PREFIX, catalogRepo, PULL_REPO, SMALL_REPO, TAGS_REPO, type SmallImage } from './fixtures.js';
import { pullBlob, pullRedirected, pushChunked, pushMonolithic } from './http.js';
import type { Registry } from './registries.js';
import { MiB, percentile } from './stats.js';
import { ACCEPT_MANIFESTS } from '../../test/helpers/images.js';

const run = promisify(execFile);

export type Group = 'blob' | 'small' | 'client';
export type Storage = 'filesystem' | 's3';

export interface Outcome {
  /** MiB/s or requests/s */
  throughput: number;
  /** wall seconds of the whole operation */
  seconds: number;
  /** per-request latencies in ms, when the scenario makes several requests */
  p50?: number;
  p99?: number;
}

export interface Scenario {
  id: string;
  group: Group;
  /** the storage both registries ran on (the S3 rows have ids starting with `s3-`) */
  storage: Storage;
  /** which pair of registries runs it: the usual ones, or (S3) the pair with redirects enabled */
  instance?: 'redirect';
  title: string;
  unit: 'MiB/s' | 'req/s';
  /** what the table says about the row (differences between the registries, caveats) */
  note?: string;
  rounds: number;
  /** once per registry before the first round, not measured (JIT warm-up, fixtures) */
  warmup?(reg: Registry): Promise<void>;
  run(reg: Registry, round: number): Promise<Outcome>;
  cleanup?(reg: Registry, round: number): Promise<void>;
  /** once after the last round, not measured */
  done?(): Promise<void>;
}

export interface BlobSettings {
  big: PatternBlob;
  eight: PatternBlob[];
  rounds: number;
  /** default filesystem: ids as they are; s3: ids prefixed `s3-`, titles say "on S3" */
  storage?: Storage;
  /** after the last round of a push scenario (S3: reclaim the deleted objects' space now) */
  afterPushes?: () => Promise<void>;
}

const idFor = (storage: Storage | undefined, id: string) => (storage === 's3' ? `s3-${id}` : id);
const onStorage = (storage: Storage | undefined) => (storage === 's3' ? ' on S3' : '');

export const mibps = (bytes: number, ms: number) => bytes / MiB / (ms / 1000);

function pushScenario(id: string, title: string, settings: BlobSettings, push: (reg: Registry, repo: string) => Promise<void>, note?: string): Scenario {
  const repo = (round: number) => `bench/push/${id}-r${round}`;
  return {
    id,
    group: 'blob',
    storage: settings.storage ?? 'filesystem',
    title,
    unit: 'MiB/s',
    rounds: settings.rounds,
    async run(reg, round) {
      const t0 = performance.now();
      await push(reg, repo(round));
      const ms = performance.now() - t0;
      return { throughput: mibps(settings.big.size, ms), seconds: ms / 1000 };
    },
    // a sha512 push is stored under sha512 by berth, under sha256 by Distribution
    cleanup: (reg, round) => reg.backend.removePushed(repo(round), [settings.big.digest(), ...(id.includes('sha512') ? [settings.big.digest('sha512')] : [])]),
    done: settings.afterPushes,
    ...(note && { note }),
  };
}

export function blobScenarios(settings: BlobSettings): Scenario[] {
  const { big, eight } = settings;
  const storage = settings.storage ?? 'filesystem';
  const id = (name: string) => idFor(storage, name);
  const on = onStorage(storage);
  const streamed = storage === 's3' ? ', streamed by the registry (redirect disabled)' : '';
  const size = `${Math.round(big.size / MiB)} MiB`;
  const each = `${Math.round(eight[0].size / MiB)} MiB`;
  const pushRepo8 = (round: number, i: number) => `bench/push/${id('8x')}-r${round}-${i}`;
  const all: Scenario[] = [
    pushScenario(id('push-monolithic'), `push ${size}${on}, monolithic (POST, one PUT)`, settings, (reg, repo) => pushMonolithic(reg.url, repo, big)),
    pushScenario(id('push-chunked-16m'), `push ${size}${on}, PATCH 16 MiB chunks`, settings, (reg, repo) => pushChunked(reg.url, repo, big, 16 * MiB)),
    pushScenario(
      id('push-sha512'),
      `push ${size}${on} by its sha512 digest, monolithic, without digest-algorithm`,
      settings,
      (reg, repo) => pushMonolithic(reg.url, repo, big, 'unannounced'),
      'both hash sha256 while writing and read the upload again for sha512; berth stores it under sha512, Distribution under sha256',
    ),
    pushScenario(
      id('push-sha512-announced'),
      `push ${size}${on} by its sha512 digest, monolithic, POST ?digest-algorithm=sha512`,
      settings,
      (reg, repo) => pushMonolithic(reg.url, repo, big, 'announced'),
      'berth hashes sha512 while writing; Distribution ignores the parameter and reads the upload again',
    ),
    pushScenario(id('push-chunked-64m'), `push ${size}${on}, PATCH 64 MiB chunks`, settings, (reg, repo) => pushChunked(reg.url, repo, big, 64 * MiB)),
    {
      id: id('push-8x'),
      group: 'blob',
      storage,
      title: `8 concurrent pushes of different ${each} blobs${on} (monolithic)`,
      unit: 'MiB/s',
      note: 'p50/p99: time of one push',
      rounds: settings.rounds,
      async run(reg, round) {
        const t0 = performance.now();
        const times = await Promise.all(
          eight.map(async (blob, i) => {
            const s = performance.now();
            await pushMonolithic(reg.url, pushRepo8(round, i), blob);
            return performance.now() - s;
          }),
        );
        const ms = performance.now() - t0;
        const total = eight.reduce((n, b) => n + b.size, 0);
        return { throughput: mibps(total, ms), seconds: ms / 1000, p50: percentile(times, 50), p99: percentile(times, 99) };
      },
      async cleanup(reg, round) {
        for (const [i, blob] of eight.entries()) await reg.backend.removePushed(pushRepo8(round, i), [blob.digest()]);
      },
      done: settings.afterPushes,
    },
    {
      id: id('pull-whole'),
      group: 'blob',
      storage,
      title: `pull ${size}${on}, one GET${streamed}`,
      unit: 'MiB/s',
      rounds: settings.rounds,
      async run(reg) {
        const ms = await pullBlob(reg.url, PULL_REPO, big.digest(), big.size);
        return { throughput: mibps(big.size, ms), seconds: ms / 1000 };
      },
    },
    {
      id: id('pull-ranged'),
      group: 'blob',
      storage,
      title: `pull ${size}${on} as 16 ranged GETs, one after another${streamed}`,
      unit: 'MiB/s',
      note: 'p50/p99: latency of one range request',
      rounds: settings.rounds,
      async run(reg) {
        const part = Math.ceil(big.size / 16);
        const times: number[] = [];
        const t0 = performance.now();
        for (let start = 0; start < big.size; start += part) {
          const end = Math.min(big.size, start + part);
          times.push(await pullBlob(reg.url, PULL_REPO, big.digest(), end - start, { start, end }));
        }
        const ms = performance.now() - t0;
        return { throughput: mibps(big.size, ms), seconds: ms / 1000, p50: percentile(times, 50), p99: percentile(times, 99) };
      },
    },
    {
      id: id('pull-redirect'),
      group: 'blob',
      storage,
      instance: 'redirect',
      title: `pull ${size}${on}, GET answered 307, then GET of the pre-signed store URL`,
      unit: 'MiB/s',
      note: 'the store sends the bytes, the registry only signs a URL: its CPU and RSS are those of the 307; time from the first request to the last byte',
      rounds: settings.rounds,
      async run(reg) {
        const ms = await pullRedirected(reg.url, PULL_REPO, big.digest(), big.size);
        return { throughput: mibps(big.size, ms), seconds: ms / 1000 };
      },
    },
    {
      id: id('pull-8x'),
      group: 'blob',
      storage,
      title: `8 concurrent pulls of different ${each} blobs${on}${streamed}`,
      unit: 'MiB/s',
      note: 'p50/p99: time of one pull',
      rounds: settings.rounds,
      async run(reg) {
        const t0 = performance.now();
        const times = await Promise.all(eight.map((blob) => pullBlob(reg.url, PULL_REPO, blob.digest(), blob.size)));
        const ms = performance.now() - t0;
        const total = eight.reduce((n, b) => n + b.size, 0);
        return { throughput: mibps(total, ms), seconds: ms / 1000, p50: percentile(times, 50), p99: percentile(times, 99) };
      },
    },
  ];
  // S3: a subset (the blob rows that matter there, in the time budget); redirects only exist there
  const s3Skips = new Set(['push-chunked-64m', 'pull-ranged', 'push-sha512', 'push-sha512-announced'].map(id));
  return all.filter((s) => (storage === 's3' ? !s3Skips.has(s.id) : s.instance !== 'redirect')).map(withWarmup);
}

/** the round number of a blob row's warm-up run (its repositories are named after it, as rounds' are) */
const WARMUP_ROUND = -1;

/**
 * A blob row runs once, unmeasured, on each registry before its first round, as the small rows
 * have autocannon warm-ups: berth's JIT compiles the row's code path while the first transfer runs
 * (the first of three 128 MiB S3 pulls cost twice the CPU of the third), Distribution is compiled
 * ahead of time. A registry runs for weeks: the warm figures are the ones its users see.
 */
function withWarmup(scenario: Scenario): Scenario {
  return {
    ...scenario,
    async warmup(reg) {
      await scenario.run(reg, WARMUP_ROUND);
      await scenario.cleanup?.(reg, WARMUP_ROUND);
    },
  };
}

export interface SmallSettings {
  image: SmallImage;
  connections: number[];
  /** seconds per autocannon run */
  duration: number;
  warmup: number;
  rounds: number;
  tags: number;
  repos: number;
  /** tags per response of each registry for `tags/list?n=1000` (measured at setup) */
  tagsPerResponse?: Record<string, number>;
  /** default filesystem: ids as they are; s3: ids prefixed `s3-`, titles say "on S3" */
  storage?: Storage;
  /** only these endpoints (ids without the `-c<connections>` suffix); default all */
  endpoints?: string[];
}


interface Endpoint {
  id: string;
  title: string;
  method: 'GET' | 'HEAD';
  path: string;
  headers?: Record<string, string>;
  note?: () => string | undefined;
  /**
   * A listing that takes tens of milliseconds or more: a fixed-duration run would end with most of
   * its requests still queued (counted as nothing, answered anyway, after the run). Instead every
   * connection sends `perConnection` requests and the rate is requests / elapsed time.
   */
  slow?: { perConnection: number };
  /** fewer rounds than the other rows (a row whose every round takes long) */
  rounds?: number;
}

/**
 * autocannon's HTTP parser (http-parser-js) waits for the body a HEAD answer announces in its
 * Content-Length and never gets it; a parser's headers callback returning 1 means "no body".
 * autocannon sets that callback after setupClient runs, so wrap whatever it sets.
 */
function headWithoutBody(client: autocannon.Client): void {
  const parser = (client as unknown as { parser: Record<number, unknown> & { constructor: { kOnHeadersComplete: number } } }).parser;
  const key = parser.constructor.kOnHeadersComplete;
  let wrapped: unknown;
  Object.defineProperty(parser, key, {
    configurable: true,
    get: () => wrapped,
    set: (fn: (...args: unknown[]) => unknown) => {
      wrapped = (...args: unknown[]) => {
        fn(...args);
        return 1;
      };
    },
  });
}

/**
 * One autocannon run; `seconds` is the time until the last answer. (autocannon checks for the end
 * of an `amount` run on a one-second tick, so its own duration of such a run is whole seconds.)
 */
async function cannon(url: string, endpoint: Endpoint, connections: number, duration: number, amount?: number): Promise<{ result: autocannon.Result; seconds: number }> {
  const t0 = performance.now();
  let last = t0;
  const result = await autocannon({
    url: url + endpoint.path,
    method: endpoint.method,
    headers: endpoint.headers,
    connections,
    ...(amount === undefined ? { duration } : { amount }),
    timeout: 300,
    setupClient: (client) => {
      if (endpoint.method === 'HEAD') headWithoutBody(client);
      client.on('response', () => {
        last = performance.now();
      });
    },
  });
  if (result.non2xx > 0 || result.errors > 0) {
    throw new Error(`${endpoint.method} ${endpoint.path} at ${connections} connections: ${result.non2xx} non-2xx answers, ${result.errors} errors (${JSON.stringify(result.statusCodeStats)})`);
  }
  return { result, seconds: amount === undefined ? result.duration : (last - t0) / 1000 };
}

export function smallEndpoints(settings: SmallSettings): Endpoint[] {
  const { image } = settings;
  const second = catalogRepo(99);
  // the page that ends with the last repository: the listing has to get past all the others first
  const deep = catalogRepo(Math.max(0, settings.repos - 101));
  return [
    { id: 'base', title: 'GET /v2/', method: 'GET', path: '/v2/' },
    { id: 'manifest-head', title: 'HEAD manifest by tag', method: 'HEAD', path: `/v2/${SMALL_REPO}/manifests/latest`, headers: { accept: ACCEPT_MANIFESTS } },
    { id: 'manifest-get', title: 'GET manifest by tag', method: 'GET', path: `/v2/${SMALL_REPO}/manifests/latest`, headers: { accept: ACCEPT_MANIFESTS } },
    { id: 'blob-head', title: 'HEAD blob (config, 200 bytes)', method: 'HEAD', path: `/v2/${SMALL_REPO}/blobs/${image.config.digest}` },
    {
      id: 'tags-list',
      title: `GET tags/list?n=1000 of ${settings.tags} tags`,
      method: 'GET',
      path: `/v2/${TAGS_REPO}/tags/list?n=1000`,
      slow: { perConnection: 4 },
      note: () => {
        const per = settings.tagsPerResponse;
        const ignored = per && per.distribution > per.berth ? ' (Distribution 2.8 ignores n and lists every tag)' : '';
        const counts = per ? `tags per response: berth ${per.berth}, Distribution ${per.distribution}${ignored}; ` : '';
        return `${counts}four requests per connection; rate = requests / time until the last answer`;
      },
    },
    {
      id: 'catalog-first',
      title: `GET _catalog?n=100, first page of ${settings.repos} repositories`,
      method: 'GET',
      path: '/v2/_catalog?n=100',
      slow: { perConnection: 2 },
      note: () => 'two requests per connection; rate = requests / time until the last answer',
    },
    {
      id: 'catalog-second',
      title: `GET _catalog?n=100&last=<100th>, second page of ${settings.repos} repositories`,
      method: 'GET',
      path: `/v2/_catalog?n=100&last=${encodeURIComponent(second)}`,
      slow: { perConnection: 2 },
      note: () => `last=${second} (repositories are ${CATALOG_PREFIX}/r00000 ...); two requests per connection; rate = requests / time until the last answer`,
    },
    {
      id: 'catalog-last',
      title: `GET _catalog?n=100&last=<${settings.repos - 100}th>, last page of ${settings.repos} repositories`,
      method: 'GET',
      path: `/v2/_catalog?n=100&last=${encodeURIComponent(deep)}`,
      slow: { perConnection: 1 },
      // Distribution walks every repository before `last` on each request: about 40 s per round at 128 connections here
      rounds: 1,
      note: () =>
        `last=${deep}, so the answer holds the last 100 of the ${settings.repos} ${CATALOG_PREFIX}/ repositories; one request per connection and one round (Distribution takes tens of seconds per round); rate = requests / time until the last answer`,
    },
  ];
}

export function smallScenarios(settings: SmallSettings): Scenario[] {
  const out: Scenario[] = [];
  const storage = settings.storage ?? 'filesystem';
  const endpoints = smallEndpoints(settings).filter((e) => !settings.endpoints || settings.endpoints.includes(e.id));
  for (const endpoint of endpoints) {
    for (const connections of settings.connections) {
      const warmed = new Set<string>();
      out.push({
        id: idFor(storage, `${endpoint.id}-c${connections}`),
        group: 'small',
        storage,
        title: `${endpoint.title}${onStorage(storage)}, ${connections} connections`,
        unit: 'req/s',
        get note() {
          return endpoint.note?.();
        },
        rounds: Math.min(settings.rounds, endpoint.rounds ?? settings.rounds),
        async warmup(reg) {
          if (settings.warmup > 0 && !warmed.has(reg.name)) {
            warmed.add(reg.name);
            if (endpoint.slow) await cannon(reg.url, endpoint, 4, 0, 8);
            else await cannon(reg.url, endpoint, connections, settings.warmup);
          }
        },
        async run(reg) {
          const amount = endpoint.slow ? endpoint.slow.perConnection * connections : undefined;
          const { result, seconds } = await cannon(reg.url, endpoint, connections, settings.duration, amount);
          return { throughput: result['2xx'] / seconds, seconds, p50: result.latency.p50, p99: result.latency.p99 };
        },
      });
    }
  }
  return out;
}

/** tags in one `tags/list?n=1000` answer of each registry */
export async function tagsPerResponse(regs: Registry[]): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const reg of regs) {
    const res = await fetch(`${reg.url}/v2/${TAGS_REPO}/tags/list?n=1000`);
    const body = (await res.json()) as { tags?: string[] };
    out[reg.name] = body.tags?.length ?? 0;
  }
  return out;
}

export interface SkopeoSettings {
  image: LayoutImage;
  /** total bytes of the image's blobs */
  bytes: number;
  rounds: number;
  work: string;
}

export const skopeo = (...args: string[]) => run('skopeo', args, { timeout: 600_000, maxBuffer: 16 * MiB });
const imageDigests = (image: LayoutImage) => [...image.blobDigests, image.manifestDigest];

export function skopeoScenarios(settings: SkopeoSettings): Scenario[] {
  const { image } = settings;
  const source = `oci:${image.dir}:${image.tag}`;
  const inRepo = (round: number) => `bench/skopeo/in-r${round}`;
  const outRepo = 'bench/skopeo/out';
  const pushed = new Set<string>();
  const layers = image.blobDigests.length - 1;
  return [
    {
      id: 'skopeo-in',
      group: 'client',
      storage: 'filesystem',
      title: `skopeo copy oci: -> registry, ${layers} layers, ${(settings.bytes / MiB).toFixed(0)} MiB`,
      unit: 'MiB/s',
      note: 'includes starting skopeo',
      rounds: settings.rounds,
      async run(reg, round) {
        const t0 = performance.now();
        await skopeo('copy', '--quiet', '--dest-tls-verify=false', source, `docker://${reg.host}/${inRepo(round)}:v1`);
        const ms = performance.now() - t0;
        return { throughput: mibps(settings.bytes, ms), seconds: ms / 1000 };
      },
      cleanup: (reg, round) => reg.backend.removePushed(inRepo(round), imageDigests(image)),
    },
    {
      id: 'skopeo-out',
      group: 'client',
      storage: 'filesystem',
      title: `skopeo copy registry -> dir:, ${layers} layers, ${(settings.bytes / MiB).toFixed(0)} MiB`,
      unit: 'MiB/s',
      note: 'includes starting skopeo and writing the files',
      rounds: settings.rounds,
      async warmup(reg) {
        if (pushed.has(reg.name)) return;
        pushed.add(reg.name);
        await skopeo('copy', '--quiet', '--dest-tls-verify=false', source, `docker://${reg.host}/${outRepo}:v1`);
      },
      async run(reg, round) {
        const dir = join(settings.work, `skopeo-out-${reg.name}-${round}`);
        const t0 = performance.now();
        await skopeo('copy', '--quiet', '--src-tls-verify=false', `docker://${reg.host}/${outRepo}:v1`, `dir:${dir}`);
        const ms = performance.now() - t0;
        await rm(dir, { recursive: true, force: true });
        return { throughput: mibps(settings.bytes, ms), seconds: ms / 1000 };
      },
    },
  ];
}
