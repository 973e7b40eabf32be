/**
 * The online collection rows at scale (issue 31; BENCH_ONLY=online-gc-s3): on the tests' Ceph, a
 * data set of R repositories and 10 R blobs written straight into the storage layout, twice (a
 * key prefix for berth, one for Distribution: a collection deletes, so each gets its own copy).
 * Each repository holds a tagged image (manifest, config, 6 layers: 8 blobs kept) and the blobs of
 * an image whose manifest was deleted (its manifest and config: 2 blobs, 20 %, to collect; their
 * `_layers` links stay, as a manifest deletion leaves them).
 *
 * Measured, each command a process under GNU time (wall, peak RSS, CPU) with its S3 requests
 * counted by kind by a proxy on 127.0.0.1 in front of radosgw:
 * - berth: `berth garbage-collect` on a writable configuration, which is one full online pass
 *   (src/registry/gc/online.ts; delay 0): the mark, then the unmarked blobs to the trash; then a
 *   second pass, which deletes them from the trash (the steady state: each pass empties the trash
 *   of the one before);
 * - Distribution: `docker-registry garbage-collect` (offline, its only mode).
 * "Above idle": the same command on a one-repository prefix gives the process's own footprint.
 * BENCH_ONLINE_GC_BASE_CLI=<dist/cli.js of another berth build> collects the second copy with that
 * build (both passes) instead of Distribution: a before/after of a change on the same data, in the
 * same minutes.
 * BENCH_ONLINE_GC_LATENCY_MS=N makes the proxy wait N ms before forwarding each request: a store
 * farther away than 127.0.0.1, where the requests a collector keeps in flight decide its time.
 * BENCH_ONLINE_GC_ONE_COPY=1 writes the set once (half the PUTs: the 10,000-repository row within a
 * bench window) and has Distribution measure first on berth's copy with `garbage-collect
 * --dry-run`, which reads all a collection reads and deletes nothing: its row leaves out the
 * deletions (a LIST and a DeleteObjects per blob, as its real run's counts show).
 */
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { stringify } from 'yaml';
import { REPO_ROOT } from '../../test/helpers/berth-process.js';
import { cleanEnv } from '../../test/helpers/processes.js';
import * as layout from '../../src/registry/layout.js';
import type { Digest } from '../../src/registry/digest.js';
import { startS3Store, type S3Prefix, type S3Store } from './s3.js';
import { MiB } from './stats.js';

const run = promisify(execFile);

export const ONLINE_GC_ID = 'online-gc-s3';

/** blobs per repository: 8 kept (tagged manifest, config, 6 layers), 2 to collect */
const KEPT = 8;
const GARBAGE = 2;
const LAYERS = 6;
/** bytes of each layer (random); configs and manifests are a few hundred bytes */
const LAYER_BYTES = 1024;
const WRITE_CONCURRENCY = 64;

export type RequestKind = 'LIST' | 'GET' | 'HEAD' | 'PUT' | 'COPY' | 'DELETE' | 'POST';
export type Requests = Partial<Record<RequestKind, number>>;

export interface CommandRun {
  seconds: number;
  cpuSeconds: number;
  peakRssKiB: number;
  /** peak RSS of the same command on a one-repository prefix */
  idleRssKiB: number;
  requests: Requests;
  /** S3 requests in flight on average over the run (their summed durations over the wall time) */
  meanInFlight: number;
  /** the command's summary (berth's line; Distribution's blob count) */
  said: string;
  /** blobs under blobs/ afterwards, against the 8 per repository expected */
  blobsLeft: number;
}

/** one command's figures, without the checks of a measured row */
export type CommandFigures = Omit<CommandRun, 'idleRssKiB' | 'blobsLeft'>;

export interface OnlineGcRun {
  repositories: number;
  blobs: number;
  bytes: number;
  objects: number;
  writeSeconds: number;
  /** BENCH_ONLINE_GC_LATENCY_MS of the run */
  addedLatencyMs: number;
  berth?: CommandRun;
  /** the next pass: the trash of the first deleted for good */
  berthSecond?: CommandRun;
  /** BENCH_ONLINE_GC_BASE_CLI's build on the second copy, both passes (in place of Distribution) */
  base?: CommandRun;
  baseSecond?: CommandRun;
  distribution?: CommandRun;
  /** BENCH_ONLINE_GC_ONE_COPY: Distribution's dry run on berth's copy, before berth collects it */
  distributionDryRun?: CommandRun;
  /** each command on a prefix of one repository: the fixed cost of a pass, and the RSS "idle" is taken from */
  baseline?: { berth: CommandFigures; distribution: CommandFigures };
  error?: string;
}

export interface OnlineGcOptions {
  work: string;
  cli: string;
  quick: boolean;
  log: (line: string) => void;
  /** why it cannot run (a Ceph tool missing) */
  cephMissing?: string;
}

/** repositories per row: two sizes, so a user can extrapolate */
export function onlineGcSizes(quick: boolean): number[] {
  const env = process.env.BENCH_ONLINE_GC_SIZES;
  if (env) return env.split(',').map(Number).filter((n) => n > 0);
  return quick ? [100, 300] : [1000, 10_000];
}

/** BENCH_ONLINE_GC_LATENCY_MS: milliseconds the proxy waits before it forwards each request (a store farther away than 127.0.0.1) */
export function addedLatencyMs(): number {
  return Number(process.env.BENCH_ONLINE_GC_LATENCY_MS ?? 0) || 0;
}

/** BENCH_ONLINE_GC_ONE_COPY: one copy of the set, Distribution's dry run on it first */
function oneCopy(): boolean {
  return process.env.BENCH_ONLINE_GC_ONE_COPY === '1';
}

/** BENCH_ONLINE_GC_BASE_CLI: a second berth build that collects the second copy instead of Distribution */
function baseCli(): string | undefined {
  return process.env.BENCH_ONLINE_GC_BASE_CLI || undefined;
}

export async function measureOnlineGc(options: OnlineGcOptions): Promise<OnlineGcRun[]> {
  const sizes = onlineGcSizes(options.quick);
  if (options.cephMissing) return sizes.map((repositories) => ({ repositories, blobs: repositories * (KEPT + GARBAGE), bytes: 0, objects: 0, writeSeconds: 0, addedLatencyMs: addedLatencyMs(), error: `skipped: ${options.cephMissing}` }));
  const runs: OnlineGcRun[] = [];
  let store: S3Store | undefined;
  let proxy: CountingProxy | undefined;
  try {
    options.log(`${ONLINE_GC_ID}: starting the Ceph store`);
    // small objects: RAM for their metadata; two copies of the largest set
    store = await startS3Store(6 * 1024 * MiB);
    proxy = await startCountingProxy(store.ceph.endpoint, addedLatencyMs());
    for (const repositories of sizes) runs.push(await measureSize(store, proxy, repositories, options));
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    options.log(`${ONLINE_GC_ID} FAILED: ${message}`);
    for (const repositories of sizes.slice(runs.length)) runs.push({ repositories, blobs: repositories * (KEPT + GARBAGE), bytes: 0, objects: 0, writeSeconds: 0, addedLatencyMs: addedLatencyMs(), error: message });
  } finally {
    await proxy?.close();
    await store?.stop();
  }
  return runs;
}

async function measureSize(store: S3Store, proxy: CountingProxy, repositories: number, options: OnlineGcOptions): Promise<OnlineGcRun> {
  const { log } = options;
  const record: OnlineGcRun = { repositories, blobs: repositories * (KEPT + GARBAGE), bytes: 0, objects: 0, writeSeconds: 0, addedLatencyMs: addedLatencyMs() };
  try {
    const prefixes = { berth: store.prefix(`online-berth-${repositories}`), distribution: store.prefix(`online-distribution-${repositories}`) };
    log(`${ONLINE_GC_ID}: writing ${repositories} repositories, ${record.blobs} blobs, under two prefixes`);
    const written = await writeSet(oneCopy() ? [prefixes.berth] : Object.values(prefixes), repositories, log);
    Object.assign(record, written);
    log(`${ONLINE_GC_ID}: ${written.objects} objects per prefix written in ${written.writeSeconds.toFixed(0)} s (${Math.round(((oneCopy() ? 1 : 2) * written.objects) / written.writeSeconds)} PUT/s)`);
    // the baseline: one repository (Distribution's command fails on a root without repositories)
    const idlePrefix = (who: string) => store.prefix(`online-idle-${who}-${repositories}`);
    await writeSet([idlePrefix('berth'), idlePrefix('distribution')], 1, log);
    const idle = (record.baseline = {
      berth: await runCommand('berth', store, proxy, idlePrefix('berth'), options),
      distribution: await runCommand('distribution', store, proxy, idlePrefix('distribution'), options),
    });
    for (const who of ['berth', 'distribution'] as const) log(`${ONLINE_GC_ID} baseline (one repository) ${who}: ${describeRun({ ...idle[who], idleRssKiB: idle[who].peakRssKiB, blobsLeft: 0 })}`);
    const measured = async (who: 'berth' | 'distribution', prefix: S3Prefix, cli = options.cli, dryRun = false): Promise<CommandRun> => {
      const result = await runCommand(who, store, proxy, prefix, { ...options, cli }, dryRun);
      const blobsLeft = await countBlobs(store, prefix);
      const commandRun = { ...result, idleRssKiB: idle[who].peakRssKiB, blobsLeft };
      log(`${ONLINE_GC_ID} ${repositories} ${who}: ${describeRun(commandRun)}; blobs left ${blobsLeft} (${repositories * KEPT} expected); said: ${result.said}`);
      return commandRun;
    };
    const base = oneCopy() ? undefined : baseCli();
    if (oneCopy()) record.distributionDryRun = await measured('distribution', prefixes.berth, options.cli, true);
    // the base build and this one alternate, on copies of the same data
    record.berth = await measured('berth', prefixes.berth);
    if (base) record.base = await measured('berth', prefixes.distribution, base);
    // the trash is emptied of what was moved at least the delay (0) ago, on the store's whole-second clock
    await new Promise((resolve) => setTimeout(resolve, 1100));
    record.berthSecond = await measured('berth', prefixes.berth);
    if (base) record.baseSecond = await measured('berth', prefixes.distribution, base);
    else if (!oneCopy()) record.distribution = await measured('distribution', prefixes.distribution);
  } catch (err) {
    record.error = err instanceof Error ? err.message : String(err);
    log(`${ONLINE_GC_ID} ${repositories} FAILED: ${record.error}`);
  }
  return record;
}

export function describeRun(r: CommandRun): string {
  const total = totalRequests(r.requests);
  return `${r.seconds.toFixed(1)} s, ${r.cpuSeconds.toFixed(1)} CPU s, peak RSS ${(r.peakRssKiB / 1024).toFixed(0)} MiB (+${((r.peakRssKiB - r.idleRssKiB) / 1024).toFixed(0)} above idle), ${total} S3 requests (${requestText(r.requests)}), ${r.meanInFlight.toFixed(1)} in flight on average`;
}

const totalRequests = (r: Requests) => Object.values(r).reduce((a, b) => a + (b ?? 0), 0);
const requestText = (r: Requests) =>
  Object.entries(r)
    .sort(([a], [b]) => (a < b ? -1 : 1))
    .map(([kind, n]) => `${kind} ${n}`)
    .join(', ');

// ------------------------------------------------------------------------------------------------
// the data set

const sha256 = (data: Buffer): Digest => `sha256:${createHash('sha256').update(data).digest('hex')}` as Digest;

function manifestOf(config: Buffer, layers: Buffer[]): Buffer {
  return Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.manifest.v1+json',
      config: { mediaType: 'application/vnd.oci.image.config.v1+json', digest: sha256(config), size: config.length },
      layers: layers.map((l) => ({ mediaType: 'application/vnd.oci.image.layer.v1.tar', digest: sha256(l), size: l.length })),
    }),
  );
}

function configOf(name: string, layers: Buffer[]): Buffer {
  return Buffer.from(JSON.stringify({ architecture: 'amd64', os: 'linux', config: { Labels: { 'bench.repository': name, nonce: randomBytes(8).toString('hex') } }, rootfs: { type: 'layers', diff_ids: layers.map(sha256) } }));
}

/** one repository's objects: [storage path, content] */
function repositoryObjects(index: number): [string, Buffer | string][] {
  const name = `online-${String(index % 100).padStart(2, '0')}/app-${String(index).padStart(6, '0')}`;
  const layers = Array.from({ length: LAYERS }, () => randomBytes(LAYER_BYTES));
  const config = configOf(name, layers);
  const manifest = manifestOf(config, layers);
  // the deleted image: its own config over the first three layers; only its manifest and config become garbage
  const oldConfig = configOf(name, layers.slice(0, 3));
  const oldManifest = manifestOf(oldConfig, layers.slice(0, 3));
  const objects: [string, Buffer | string][] = [];
  for (const blob of [manifest, config, ...layers, oldManifest, oldConfig]) objects.push([layout.blobData(sha256(blob)), blob]);
  for (const blob of [config, ...layers, oldConfig]) objects.push([layout.layerLink(name, sha256(blob)), sha256(blob)]);
  objects.push([layout.manifestRevisionLink(name, sha256(manifest)), sha256(manifest)]);
  objects.push([layout.tagCurrentLink(name, 'latest'), sha256(manifest)]);
  return objects;
}

/** the set under every prefix (the same objects), WRITE_CONCURRENCY PutObject calls in flight */
async function writeSet(prefixes: S3Prefix[], repositories: number, log: (line: string) => void): Promise<{ objects: number; bytes: number; writeSeconds: number }> {
  const started = performance.now();
  let objects = 0;
  let bytes = 0;
  function* each(): Generator<[S3Prefix, string, Buffer | string]> {
    for (let r = 0; r < repositories; r++) {
      const repo = repositoryObjects(r);
      for (const [path, data] of repo) {
        objects++;
        if (path.endsWith('/data')) bytes += data.length;
        for (const prefix of prefixes) yield [prefix, path, data];
      }
    }
  }
  const source = each();
  let lastLog = performance.now();
  let puts = 0;
  await Promise.all(
    Array.from({ length: WRITE_CONCURRENCY }, async () => {
      for (let item = source.next(); !item.done; item = source.next()) {
        const [prefix, path, data] = item.value;
        await prefix.put(path, data);
        puts++;
        if (performance.now() - lastLog > 30_000) {
          lastLog = performance.now();
          log(`${ONLINE_GC_ID}: ${puts} objects written, ${Math.round(puts / ((lastLog - started) / 1000))} PUT/s`);
        }
      }
    }),
  );
  return { objects, bytes, writeSeconds: (performance.now() - started) / 1000 };
}

/** blob contents (`.../data`) under the prefix's blobs/ */
async function countBlobs(store: S3Store, prefix: S3Prefix): Promise<number> {
  let count = 0;
  let token: string | undefined;
  do {
    const page = await store.client.send(new ListObjectsV2Command({ Bucket: store.bucket, Prefix: `${prefix.key(layout.BLOBS)}/`, ContinuationToken: token }));
    count += (page.Contents ?? []).filter((o) => o.Key?.endsWith('/data')).length;
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  return count;
}

// ------------------------------------------------------------------------------------------------
// the commands

async function runCommand(who: 'berth' | 'distribution', store: S3Store, proxy: CountingProxy, prefix: S3Prefix, options: OnlineGcOptions, dryRun = false): Promise<CommandFigures> {
  const config = join(options.work, `online-gc-${who}.yml`);
  const s3 = { ...store.ceph.params(store.bucket, { rootdirectory: prefix.rootdirectory }), regionendpoint: proxy.endpoint, v4auth: true };
  await writeFile(
    config,
    stringify({
      version: '0.1',
      log: { level: 'error' },
      storage: { s3, delete: { enabled: true }, maintenance: { uploadpurging: { enabled: false }, ...(who === 'berth' ? { gc: { delay: '0' } } : {}) } },
      ...(who === 'berth' ? { metadata: { enabled: false } } : {}),
    }),
  );
  const command = who === 'berth' ? [process.execPath, options.cli, 'garbage-collect', '--quiet', config] : ['/usr/bin/docker-registry', 'garbage-collect', ...(dryRun ? ['--dry-run'] : []), config];
  proxy.reset();
  const { stdout, stderr } = await run('/usr/bin/time', ['-f', 'BENCH-TIME %e %M %U %S', ...command], {
    cwd: REPO_ROOT,
    maxBuffer: 512 * MiB,
    // Distribution's S3 driver fails on an AWS_CA_BUNDLE it cannot read; neither reads REGISTRY_* overrides here
    env: cleanEnv({ dropPrefixes: ['REGISTRY_'] }),
  });
  const requests = proxy.counts();
  const busyMs = proxy.busyMs();
  const m = /BENCH-TIME ([\d.]+) (\d+) ([\d.]+) ([\d.]+)/.exec(stderr);
  if (!m) throw new Error(`${who} garbage-collect: no figures from GNU time: ${stderr.slice(-500)}`);
  const said = who === 'berth' ? (stdout.trim().split('\n').pop() ?? '') : distributionSummary(stdout + stderr);
  return { seconds: Number(m[1]), peakRssKiB: Number(m[2]), cpuSeconds: Number(m[3]) + Number(m[4]), requests, meanInFlight: busyMs / (Number(m[1]) * 1000 || 1), said };
}

/** Distribution prints a line per blob it deletes; the count says enough */
function distributionSummary(output: string): string {
  const deleting = output.split('\n').filter((l) => /[Dd]eleting blob/.test(l)).length;
  const marked = /(\d+) blobs marked, (\d+) blobs and (\d+) manifests eligible for deletion/.exec(output);
  return marked ? marked[0] : `${deleting} blobs deleted`;
}

// ------------------------------------------------------------------------------------------------
// the counting proxy: every S3 request of a command passes through it, counted by kind

interface CountingProxy {
  endpoint: string;
  reset(): void;
  counts(): Requests;
  /** the summed durations of the requests since reset (from arrival to the answer's end) */
  busyMs(): number;
  close(): Promise<void>;
}

/** the kind of an S3 request (path-style: /bucket for the bucket, /bucket/key for an object) */
function kindOf(req: IncomingMessage): RequestKind {
  const url = new URL(req.url ?? '/', 'http://x');
  const onBucket = url.pathname.replace(/^\/+/, '').split('/').filter(Boolean).length <= 1;
  switch (req.method) {
    case 'GET':
      return onBucket ? 'LIST' : 'GET';
    case 'HEAD':
      return 'HEAD';
    case 'PUT':
      return req.headers['x-amz-copy-source'] ? 'COPY' : 'PUT';
    case 'DELETE':
      return 'DELETE';
    default:
      // DeleteObjects (POST ?delete) and multipart uploads
      return 'POST';
  }
}

/**
 * The Host header passes unchanged, so the requests' SigV4 signatures (made for the proxy's
 * address) hold. `latencyMs` is waited before each request is forwarded.
 */
async function startCountingProxy(upstream: string, latencyMs: number): Promise<CountingProxy> {
  const target = new URL(upstream);
  let counts: Requests = {};
  let busy = 0;
  const server: Server = createServer((req, res) => {
    const kind = kindOf(req);
    counts[kind] = (counts[kind] ?? 0) + 1;
    const started = performance.now();
    res.on('close', () => {
      busy += performance.now() - started;
    });
    if (latencyMs === 0) return forward(req, res);
    req.pause();
    setTimeout(() => forward(req, res), latencyMs);
  });
  const forward = (req: IncomingMessage, res: ServerResponse) => {
    const out = request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    out.on('error', (err) => {
      if (!res.headersSent) res.writeHead(502);
      res.end(String(err));
    });
    req.pipe(out);
    req.resume();
  };
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    endpoint: `http://127.0.0.1:${port}`,
    reset: () => {
      counts = {};
      busy = 0;
    },
    busyMs: () => busy,
    counts: () => ({ ...counts }),
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

// ------------------------------------------------------------------------------------------------
// the results page

const f = (v: number, digits = 1) => v.toFixed(digits);

export function renderOnlineGc(lines: string[], runs: OnlineGcRun[]): void {
  lines.push('');
  lines.push('## Online garbage collection at scale on S3 (issue 31)');
  lines.push('');
  lines.push(
    `The tests' Ceph radosgw (bench/lib/gc-online-scale.ts): per repository a tagged image (manifest, config, ${LAYERS} layers of ${LAYER_BYTES} bytes: ${KEPT} blobs kept) and the manifest and config of a deleted image (${GARBAGE} blobs to collect), written straight into the storage layout, a copy for each registry. ` +
      '**berth**: `berth garbage-collect` on a writable configuration, which is one full online pass (mark every repository, unmarked blobs to the trash; `storage.maintenance.gc.delay: 0`), then the next pass (the trash of the first deleted for good: what every pass does in the steady state). ' +
      '**Distribution**: `docker-registry garbage-collect` (offline, its only mode: the registry must be stopped or read-only meanwhile). ' +
      'Each a process under GNU time; S3 requests counted by kind by a proxy on 127.0.0.1 in front of radosgw (both pass through it). Above idle: over the peak RSS of the same command on a prefix of one repository. In flight: the requests\' summed durations over the wall time.',
  );
  lines.push('');
  const latency = runs.find((r) => r.addedLatencyMs > 0)?.addedLatencyMs;
  if (latency) lines.push('', `**The proxy waited ${latency} ms before forwarding each request** (BENCH_ONLINE_GC_LATENCY_MS): a store farther away than 127.0.0.1.`);
  lines.push('');
  lines.push('| repositories / blobs | who | seconds | CPU s | peak RSS MiB (above idle) | S3 requests | per repository | in flight (mean) | by kind | blobs left (expected) |');
  lines.push('|---|---|---:|---:|---:|---:|---:|---:|---|---|');
  for (const r of runs) {
    const size = `${r.repositories.toLocaleString('en')} / ${r.blobs.toLocaleString('en')}`;
    if (r.error) {
      lines.push(`| ${size} | | | | | | | | **${r.error.replace(/\|/g, '/').replace(/\n/g, ' ').slice(0, 300)}** | |`);
      continue;
    }
    const row = (who: string, c: CommandRun | undefined) => {
      if (!c) return;
      const total = totalRequests(c.requests);
      const expected = r.repositories * KEPT;
      lines.push(
        `| ${size} | ${who} | ${f(c.seconds)} | ${f(c.cpuSeconds)} | ${f(c.peakRssKiB / 1024, 0)} (+${f((c.peakRssKiB - c.idleRssKiB) / 1024, 0)}) | ${total.toLocaleString('en')} | ${f(total / r.repositories)} | ${f(c.meanInFlight)} | ${requestText(c.requests)} | ${c.blobsLeft} (${expected})${c.blobsLeft === expected ? '' : ' **WRONG**'} |`,
      );
    };
    for (const [who, c] of Object.entries(r.baseline ?? {})) {
      lines.push(`| 1 / ${KEPT + GARBAGE} (baseline of the row below) | ${who} | ${f(c.seconds)} | ${f(c.cpuSeconds)} | ${f(c.peakRssKiB / 1024, 0)} | ${totalRequests(c.requests).toLocaleString('en')} | | ${f(c.meanInFlight)} | ${requestText(c.requests)} | |`);
    }
    row('berth, online pass', r.berth);
    row('berth, next pass (empties the trash)', r.berthSecond);
    row('berth base build (BENCH_ONLINE_GC_BASE_CLI), online pass', r.base);
    row('berth base build, next pass', r.baseSecond);
    row('Distribution, offline', r.distribution);
    if (r.distributionDryRun) row('Distribution, offline, --dry-run on berth\'s copy before berth collects it (no deletions)', { ...r.distributionDryRun, blobsLeft: r.repositories * KEPT });
    lines.push(`| ${size} | data set | write ${f(r.writeSeconds, 0)} s | | | ${((r.distributionDryRun ? 1 : 2) * r.objects).toLocaleString('en')} PUT | | | ${r.objects.toLocaleString('en')} objects per copy, ${f(r.bytes / MiB, 0)} MiB of blobs | |`);
  }
}
