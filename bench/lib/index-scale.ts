/**
 * The metadata index rows (issue 28, "Scale, measured"; BENCH_ONLY=index): on the scale data set
 * (scale-data.ts: 100,000 repositories, 1,000,000 tags, one repository of 100,000), three
 * registries on the same storage: berth with the index (SQLite, built by `berth index rebuild`
 * before anything is timed: that rebuild is the rebuild row), berth without it
 * (`metadata: {enabled: false}`), and Distribution. Each listing row sends a few hundred requests
 * one after another on one kept-alive connection (fewer when a request takes long: each row has a
 * time budget) and reports p50/p99 latency. Then the push row: a small image pushed into the same
 * registries, berth with the index against berth without.
 *
 * On the filesystem the full set (reused between runs from BENCH_SCALE_DIR); on the tests' Ceph a
 * smaller set by default (S3_SCALE), the full one with BENCH_SCALE_S3_FULL=1: creating 1.9 million
 * objects on this machine's single-node radosgw takes longer than a bench run (see the page).
 *
 * The ext endpoints (usage, search) may not exist yet in the berth being measured: a 404 is
 * reported as "endpoint missing", not as a failure.
 */
import { execFile } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { Agent, request, type IncomingHttpHeaders } from 'node:http';
import { rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { readProcessMemory, REPO_ROOT, resetPeakRss } from '../../test/helpers/berth-process.js';
import { cleanEnv } from '../../test/helpers/processes.js';
import * as layout from '../../src/registry/layout.js';
import type { Digest } from '../../src/registry/digest.js';
import { filesystemBackend, s3Backend, startBerth, startDistribution, type Backend, type Registry } from './registries.js';
import { FULL_SCALE, writeFilesystemSet, writeS3Set, type ScaleSet, type ScaleSpec, type WriteCpu } from './scale-data.js';
import { startS3Store, type S3Store } from './s3.js';
import { median, MiB, percentile } from './stats.js';

const run = promisify(execFile);

export const INDEX_SCALE_ID = 'index';

/** the S3 set by default: a tenth of the full one (see S3_FULL_ENV) */
export const S3_SCALE: ScaleSpec = { repositories: 10_000, tags: 100_000, bigTags: 10_000 };
export const S3_FULL_ENV = 'BENCH_SCALE_S3_FULL';
/** PUTs in flight writing the S3 set: the CPU is the limit on this machine, not the connections (docs/performance.md) */
const S3_IN_FLIGHT = 64;
const QUICK_SCALE: ScaleSpec = { repositories: 2_000, tags: 20_000, bigTags: 5_000 };

export type Variant = 'index' | 'plain' | 'distribution';
export const VARIANTS: Variant[] = ['index', 'plain', 'distribution'];
const VARIANT_TITLES: Record<Variant, string> = { index: 'berth, index', plain: 'berth, no index', distribution: 'Distribution' };

/** a listing row's requests: at most `requests`, stopping after `budgetMs` (but never fewer than 5, or 1 when an answer takes a second) */
interface Budget {
  requests: number;
  budgetMs: number;
  /** a request taking longer is abandoned and the cell reports "more than" this */
  timeoutMs: number;
}

export type Cell =
  | { kind: 'measured'; requests: number; p50: number; p99: number; status: number; entries?: number; bodyHash: string }
  | { kind: 'missing'; reason: string }
  /** the first request took longer than `afterMs` and was abandoned */
  | { kind: 'timeout'; afterMs: number }
  | { kind: 'failed'; reason: string };

export interface LatencyRow {
  id: string;
  title: string;
  path: string;
  /** a listing row: the target is p99 <= 10 ms with the index */
  listing: boolean;
  cells: Partial<Record<Variant, Cell>>;
}

export interface RebuildRow {
  seconds: number;
  repositories: number;
  manifests: number;
  tags: number;
  rate: number;
  peakRssKiB?: number;
  /** user + system CPU seconds of the process: on a shared machine the rate per CPU second says more than the wall-clock one */
  cpuSeconds?: number;
}

export interface PushRow {
  pushes: number;
  /** milliseconds of each whole push (two blobs, the manifest) and of its manifest PUT alone */
  index: { push: number[]; manifest: number[] };
  plain: { push: number[]; manifest: number[] };
}

export interface IndexScaleRun {
  storage: 'filesystem' | 's3';
  spec: ScaleSpec;
  objects: number;
  /** seconds the set took to write; undefined when reused */
  writeSeconds?: number;
  /** CPU seconds the writing took (S3: the writer, radosgw and the OSD) */
  writeCpu?: WriteCpu;
  /** PUTs kept in flight while writing the S3 set */
  inFlight?: number;
  where: string;
  full: boolean;
  rebuild?: RebuildRow;
  rows: LatencyRow[];
  /** RSS MiB of each berth: at idle after start, and the peak over the rows */
  rss: Partial<Record<'index' | 'plain', { idle: number; peak: number }>>;
  push?: PushRow;
  error?: string;
  notes: string[];
}

export interface IndexScaleOptions {
  work: string;
  /** compiled berth (bench/lib/registries.ts buildBerth); undefined: from src/ through tsx */
  cli: string | undefined;
  quick: boolean;
  log: (line: string) => void;
  /** the storages to measure (BENCH_ONLY=index-fs or index-s3 picks one) */
  storages: ('filesystem' | 's3')[];
  /** why the S3 rows cannot run (a Ceph tool missing) */
  s3Missing?: string;
}

/** the ids BENCH_ONLY selects: `index` both, `index-fs` or `index-s3` one */
export const INDEX_SCALE_IDS = { filesystem: `${INDEX_SCALE_ID}-fs`, s3: `${INDEX_SCALE_ID}-s3` } as const;

export async function measureIndexScale(options: IndexScaleOptions): Promise<IndexScaleRun[]> {
  const runs: IndexScaleRun[] = [];
  if (options.storages.includes('filesystem')) runs.push(await filesystemRun(options));
  if (options.storages.includes('s3')) {
    if (options.s3Missing) runs.push({ storage: 's3', spec: S3_SCALE, objects: 0, where: '', full: false, rows: [], rss: {}, notes: [], error: `skipped: ${options.s3Missing}` });
    else runs.push(await s3Run(options));
  }
  return runs;
}

async function filesystemRun(options: IndexScaleOptions): Promise<IndexScaleRun> {
  const spec = options.quick ? QUICK_SCALE : FULL_SCALE;
  const cacheDir = process.env.BENCH_SCALE_DIR;
  const root = cacheDir ? join(cacheDir, `fs-${spec.repositories}-${spec.tags}`) : join(options.work, 'scale-fs');
  const runRecord: IndexScaleRun = { storage: 'filesystem', spec, objects: 0, where: root, full: spec === FULL_SCALE, rows: [], rss: {}, notes: [] };
  try {
    options.log(`index rows, filesystem: ${cacheDir ? `scale set under BENCH_SCALE_DIR (${root})` : 'writing the scale set (set BENCH_SCALE_DIR to keep it between runs)'}`);
    const set = await writeFilesystemSet(root, spec, options.log);
    Object.assign(runRecord, { objects: set.objects, writeSeconds: set.writeSeconds });
    await measureSet(runRecord, set, filesystemBackend(root), options, budgets(false));
  } catch (err) {
    runRecord.error = err instanceof Error ? err.message : String(err);
    options.log(`index rows on the filesystem FAILED: ${runRecord.error}`);
  } finally {
    // only a set outside BENCH_SCALE_DIR goes (rm(1): fs.rm takes minutes on millions of entries)
    if (!cacheDir) await run('rm', ['-rf', root]).catch(() => undefined);
  }
  return runRecord;
}

async function s3Run(options: IndexScaleOptions): Promise<IndexScaleRun> {
  const full = process.env[S3_FULL_ENV] === '1';
  const spec = options.quick ? QUICK_SCALE : full ? FULL_SCALE : S3_SCALE;
  const runRecord: IndexScaleRun = { storage: 's3', spec, objects: 0, where: '', full: spec === FULL_SCALE, rows: [], rss: {}, notes: [] };
  let store: S3Store | undefined;
  try {
    options.log('index rows, S3: starting the Ceph store');
    // objects are small: RAM for their metadata, not their bytes
    store = await startS3Store(4 * 1024 * MiB);
    const prefix = store.prefix('scale');
    const set = await writeS3Set(store, prefix, spec, S3_IN_FLIGHT, options.log);
    Object.assign(runRecord, { objects: set.objects, writeSeconds: set.writeSeconds, writeCpu: set.writeCpu, inFlight: S3_IN_FLIGHT, where: `bucket ${store.bucket}, prefix ${prefix.rootdirectory}` });
    await measureSet(runRecord, set, s3Backend(store, prefix, false), options, budgets(true));
  } catch (err) {
    runRecord.error = err instanceof Error ? err.message : String(err);
    options.log(`index rows on S3 FAILED: ${runRecord.error}`);
  } finally {
    await store?.stop();
  }
  return runRecord;
}

/** requests per row; slow answers (walks over storage) stop at the time budget */
function budgets(s3: boolean): Budget {
  return s3 ? { requests: 200, budgetMs: 30_000, timeoutMs: 120_000 } : { requests: 300, budgetMs: 20_000, timeoutMs: 60_000 };
}

/** the rows of one set: rebuild, the three registries side by side, the push row */
async function measureSet(record: IndexScaleRun, set: ScaleSet, backend: Backend, options: IndexScaleOptions, budget: Budget): Promise<void> {
  const { work, cli, log } = options;
  const indexFile = join(work, `scale-index-${record.storage}.sqlite`);
  await removeSqlite(indexFile);
  const metadata = { sqlite: { path: indexFile } };
  record.rebuild = await rebuildOnce(backend, metadata, cli, work, log);
  log(`index rebuild (${record.storage}): ${record.rebuild.manifests} manifests, ${record.rebuild.tags} tags in ${record.rebuild.seconds.toFixed(1)} s: ${record.rebuild.rate} manifests/s`);

  const registries: Partial<Record<Variant, Registry>> = {};
  try {
    registries.index = await startBerth(backend, cli, { config: { metadata }, fromSource: cli === undefined });
    registries.plain = await startBerth(backend, cli, { config: { metadata: { enabled: false } }, fromSource: cli === undefined });
    registries.distribution = await startDistribution(backend);
    for (const v of ['index', 'plain'] as const) record.rss[v] = { idle: readProcessMemory(registries[v]!.pid).rss / MiB, peak: 0 };
    for (const v of ['index', 'plain'] as const) resetPeakRss(registries[v]!.pid);

    for (const row of rowsOf(set)) {
      for (const variant of VARIANTS) {
        if (!row.variants.includes(variant)) continue;
        const reg = registries[variant]!;
        row.result.cells[variant] = await measureRow(reg.url, row.result.path, budget, row.ext === true && variant === 'index');
        log(`${row.result.id} ${VARIANT_TITLES[variant]}: ${describeCell(row.result.cells[variant]!)}`);
      }
      record.rows.push(row.result);
    }
    for (const v of ['index', 'plain'] as const) record.rss[v]!.peak = readProcessMemory(registries[v]!.pid).hwm / MiB;
    record.push = await measurePush(registries.index!, registries.plain!, backend, options.quick ? 10 : 40, log);
  } finally {
    await Promise.allSettled(Object.values(registries).map((r) => r.stop()));
    await removeSqlite(indexFile);
  }
}

function describeCell(cell: Cell): string {
  if (cell.kind === 'measured') return `p50 ${cell.p50.toFixed(2)} ms, p99 ${cell.p99.toFixed(2)} ms over ${cell.requests} requests (HTTP ${cell.status}${cell.entries !== undefined ? `, ${cell.entries} entries` : ''})`;
  if (cell.kind === 'timeout') return `no answer within ${cell.afterMs / 1000} s`;
  return `${cell.kind}: ${cell.reason}`;
}

async function removeSqlite(file: string): Promise<void> {
  for (const f of [file, `${file}-wal`, `${file}-shm`]) await rm(f, { force: true });
}

/** `berth index rebuild` of a fresh SQLite file, as a process under GNU time (peak RSS) */
async function rebuildOnce(backend: Backend, metadata: Record<string, unknown>, cli: string | undefined, work: string, log: (line: string) => void): Promise<RebuildRow> {
  const config = join(work, 'scale-rebuild.yml');
  await writeFile(config, stringify({ version: '0.1', log: { level: 'error' }, storage: backend.storage, metadata }));
  const berth = cli ? [process.execPath, cli] : [process.execPath, '--import', 'tsx', join(REPO_ROOT, 'src/cli.ts')];
  log('index rebuild: `berth index rebuild` into a fresh SQLite file');
  const started = performance.now();
  const { stdout, stderr } = await run('/usr/bin/time', ['-f', 'BENCH-TIME %M %U %S', ...berth, 'index', 'rebuild', config], {
    cwd: REPO_ROOT,
    maxBuffer: 64 * MiB,
    // as the servers run: no REGISTRY_* overrides of the configuration
    env: cleanEnv({ dropPrefixes: ['REGISTRY_'] }),
  });
  const seconds = (performance.now() - started) / 1000;
  const m = /indexed (\d+) repositories, (\d+) manifests, (\d+) tags in ([\d.]+) s/.exec(stdout);
  if (!m) throw new Error(`berth index rebuild said: ${stdout.slice(-500)} ${stderr.slice(-500)}`);
  const rss = /BENCH-TIME (\d+) ([\d.]+) ([\d.]+)/.exec(stderr);
  // the command's own figure (the walk and the writes, not the process start)
  const own = Number(m[4]) || seconds;
  return { seconds: own, repositories: Number(m[1]), manifests: Number(m[2]), tags: Number(m[3]), rate: Math.round(Number(m[2]) / own), peakRssKiB: rss ? Number(rss[1]) : undefined, cpuSeconds: rss ? Number(rss[2]) + Number(rss[3]) : undefined };
}

interface PlannedRow {
  result: LatencyRow;
  variants: Variant[];
  /** an endpoint of the index (404 without it is "endpoint missing") */
  ext?: boolean;
}

function rowsOf(set: ScaleSet): PlannedRow[] {
  const n = 100;
  // the second-to-last page's last entry: what a client sends for the last page
  const lastOf = (names: string[]) => names[Math.max(0, names.length - n - 1)];
  const all: Variant[] = ['index', 'plain', 'distribution'];
  const row = (id: string, title: string, path: string, variants: Variant[], listing: boolean, ext = false): PlannedRow => ({ result: { id, title, path, listing, cells: {} }, variants, ext });
  const big = set.big;
  return [
    row('catalog-first', 'catalog, first page', `/v2/_catalog?n=${n}`, all, true),
    row('catalog-last', 'catalog, last page', `/v2/_catalog?n=${n}&last=${encodeURIComponent(lastOf(set.repositories))}`, all, true),
    row('tags-first', `tags/list of ${big} (${set.bigTags.length} tags), first page`, `/v2/${big}/tags/list?n=${n}`, all, true),
    row('tags-last', `tags/list of ${big}, last page`, `/v2/${big}/tags/list?n=${n}&last=${encodeURIComponent(lastOf(set.bigTags))}`, all, true),
    row('ui-tags-pushed', `web interface's tag list of ${big}, newest push first`, `/ui/api/repositories/${big}/tags/list?sort=pushed&desc=1`, ['index', 'plain'], true),
    row('usage-namespace', `usage of the namespace ${set.namespace}/ (${set.repositories.length / 100} repositories)`, `/v2/_berth/ext/usage?namespace=${set.namespace}`, ['index'], false, true),
    row('search', `search for "${set.search}" (a prefix)`, `/v2/_berth/ext/search?q=${encodeURIComponent(set.search)}`, ['index'], false, true),
  ];
}

/** one kept-alive connection: what the latency rows measure is the server, not connection set-up */
const agent = new Agent({ keepAlive: true, maxSockets: 1 });

interface Reply {
  status: number;
  headers: IncomingHttpHeaders;
  body: Buffer;
  ms: number;
}

class Timeout extends Error {}

function get(url: string, method = 'GET', body?: Buffer, headers: Record<string, string> = {}, timeoutMs = 600_000): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const started = performance.now();
    // its own connection when it may be abandoned: the kept-alive one must not wait behind it
    const req = request(url, { method, agent: timeoutMs < 600_000 ? false : agent, headers: body ? { 'content-length': String(body.length), ...headers } : headers }, (res) => {
      const parts: Buffer[] = [];
      res.on('data', (c: Buffer) => parts.push(c));
      res.on('error', reject);
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(parts), ms: performance.now() - started }));
    });
    const timer = setTimeout(() => req.destroy(new Timeout(`${method} ${url}: no answer within ${timeoutMs / 1000} s`)), timeoutMs);
    req.on('close', () => clearTimeout(timer));
    req.on('error', reject);
    req.end(body);
  });
}

/** entries of a listing answer (repositories, tags, a search's hits of every kind, or a JSON array), to show what each registry returned */
function entriesOf(body: Buffer): number | undefined {
  try {
    const doc = JSON.parse(body.toString()) as unknown;
    if (Array.isArray(doc)) return doc.length;
    if (doc && typeof doc === 'object') {
      const lists = ['repositories', 'tags', 'digests', 'values', 'results', 'items'].map((key) => (doc as Record<string, unknown>)[key]).filter(Array.isArray);
      if (lists.length > 0) return lists.reduce((n, list) => n + list.length, 0);
    }
  } catch {
    // not JSON
  }
  return undefined;
}

async function measureRow(base: string, path: string, budget: Budget, ext: boolean): Promise<Cell> {
  const url = `${base}${path}`;
  try {
    const first = await get(url, 'GET', undefined, {}, budget.timeoutMs).catch((err: unknown) => {
      if (err instanceof Timeout) return undefined;
      throw err;
    });
    if (!first) return { kind: 'timeout', afterMs: budget.timeoutMs };
    if (first.status === 404 && ext) return { kind: 'missing', reason: `endpoint missing (HTTP 404: ${first.body.toString().slice(0, 120)})` };
    if (first.status !== 200) return { kind: 'failed', reason: `HTTP ${first.status}: ${first.body.toString().slice(0, 300)}` };
    // warm-up: a few unmeasured requests (caches, JIT)
    for (let i = 0; i < 3 && first.ms < budget.budgetMs / 20; i++) await get(url);
    const times: number[] = [];
    const started = performance.now();
    // slow answers (a walk over storage): as many as the budget holds, at least one
    const least = first.ms < 1000 ? 5 : 1;
    while (times.length < budget.requests && (times.length < least || performance.now() - started < budget.budgetMs)) {
      const reply = await get(url);
      if (reply.status !== 200) return { kind: 'failed', reason: `HTTP ${reply.status} after ${times.length} requests: ${reply.body.toString().slice(0, 300)}` };
      times.push(reply.ms);
    }
    return { kind: 'measured', requests: times.length, p50: percentile(times, 50), p99: percentile(times, 99), status: first.status, entries: entriesOf(first.body), bodyHash: createHash('sha256').update(first.body).digest('hex').slice(0, 12) };
  } catch (err) {
    return { kind: 'failed', reason: err instanceof Error ? err.message : String(err) };
  }
}

/**
 * a small image (a config and a 4 KiB layer of their own, the manifest with a tag) pushed
 * `pushes` times into each berth, alternating; each into a repository of its own, removed afterwards
 */
async function measurePush(withIndex: Registry, without: Registry, backend: Backend, pushes: number, log: (line: string) => void): Promise<PushRow> {
  const row: PushRow = { pushes, index: { push: [], manifest: [] }, plain: { push: [], manifest: [] } };
  const pushed: { repo: string; digests: string[] }[] = [];
  try {
    for (let i = 0; i < pushes; i++) {
      const order = i % 2 === 0 ? (['index', 'plain'] as const) : (['plain', 'index'] as const);
      for (const variant of order) {
        const reg = variant === 'index' ? withIndex : without;
        const repo = `bench-push/${variant}-${i}`;
        const { total, manifest, digests } = await pushImage(reg.url, repo);
        row[variant].push.push(total);
        row[variant].manifest.push(manifest);
        pushed.push({ repo, digests });
      }
    }
    log(`push with the index: median ${median(row.index.push).toFixed(2)} ms (manifest PUT ${median(row.index.manifest).toFixed(2)}), without: ${median(row.plain.push).toFixed(2)} ms (${median(row.plain.manifest).toFixed(2)})`);
  } finally {
    // the set stays as written (it may be reused from BENCH_SCALE_DIR)
    for (const { repo, digests } of pushed) await backend.removePushed(repo, digests).catch(() => undefined);
    if (backend.kind === 'filesystem') {
      const root = (backend.storage.filesystem as { rootdirectory: string }).rootdirectory;
      await rm(join(root, layout.repository('bench-push')), { recursive: true, force: true });
    }
  }
  return row;
}

const sha256 = (data: Buffer) => `sha256:${createHash('sha256').update(data).digest('hex')}` as Digest;

/** one small image pushed (a config and a 4 KiB layer, POST + PUT each, then the manifest as `latest`): the push row's unit, also bench/push-index.ts's */
export async function pushImage(base: string, repo: string): Promise<{ total: number; manifest: number; digests: string[] }> {
  const layer = randomBytes(4096);
  const config = Buffer.from(JSON.stringify({ architecture: 'amd64', os: 'linux', config: { Labels: { nonce: randomBytes(8).toString('hex') } }, rootfs: { type: 'layers', diff_ids: [sha256(layer)] } }));
  const manifestBody = Buffer.from(
    JSON.stringify({
      schemaVersion: 2,
      mediaType: 'application/vnd.oci.image.manifest.v1+json',
      config: { mediaType: 'application/vnd.oci.image.config.v1+json', digest: sha256(config), size: config.length },
      layers: [{ mediaType: 'application/vnd.oci.image.layer.v1.tar', digest: sha256(layer), size: layer.length }],
    }),
  );
  const started = performance.now();
  for (const blob of [config, layer]) {
    const post = await get(`${base}/v2/${repo}/blobs/uploads/`, 'POST', Buffer.alloc(0));
    if (post.status !== 202 || !post.headers.location) throw new Error(`POST upload to ${repo}: HTTP ${post.status}: ${post.body.toString().slice(0, 200)}`);
    const url = new URL(post.headers.location, base);
    url.searchParams.set('digest', sha256(blob));
    const put = await get(url.toString(), 'PUT', blob, { 'content-type': 'application/octet-stream' });
    if (put.status !== 201) throw new Error(`PUT blob to ${repo}: HTTP ${put.status}: ${put.body.toString().slice(0, 200)}`);
  }
  const put = await get(`${base}/v2/${repo}/manifests/latest`, 'PUT', manifestBody, { 'content-type': 'application/vnd.oci.image.manifest.v1+json' });
  if (put.status !== 201) throw new Error(`PUT manifest to ${repo}: HTTP ${put.status}: ${put.body.toString().slice(0, 200)}`);
  return { total: performance.now() - started, manifest: put.ms, digests: [sha256(config), sha256(layer), sha256(manifestBody)] };
}

// ------------------------------------------------------------------------------------------------
// the results page

const fmt = (v: number | undefined, digits = 2) => (v === undefined || Number.isNaN(v) ? '–' : v.toFixed(digits));

const LISTING_TARGET_MS = 10;
const S3_CATALOG_FACTOR = 100;
const REBUILD_TARGET = 2000;
const PUSH_TARGET_MS = 2;

function cellText(cell: Cell | undefined): string {
  if (!cell) return '';
  if (cell.kind === 'missing') return 'endpoint missing';
  if (cell.kind === 'timeout') return `more than ${cell.afterMs / 1000} s (abandoned)`;
  if (cell.kind === 'failed') return `failed: ${cell.reason.replace(/\|/g, '/').slice(0, 120)}`;
  return `${fmt(cell.p50)} / ${fmt(cell.p99)} (${cell.requests}${cell.entries !== undefined ? `, ${cell.entries} entries` : ''})`;
}

const measured = (cell: Cell | undefined) => (cell?.kind === 'measured' ? cell : undefined);

/** the section of the results page: per storage the set, the rebuild, the rows with their targets, memory, the push row */
export function renderIndexScale(lines: string[], runs: IndexScaleRun[]): void {
  lines.push('');
  lines.push('## Metadata index at scale (issue 28)');
  lines.push('');
  lines.push(
    'The scale data set (bench/lib/scale-data.ts) written straight into the storage layout: repositories `team-NN/app-NNNNNN` in 100 namespaces and one repository `team-00/big` ' +
      'with many tags; the tags name 4 shared images (a config each, one shared layer). Per tag its `current/link`; the tags\' `index/` links, which nothing measured reads, are left out (they would double the disk use). ' +
      'Three registries on the same storage: **berth, index** (`metadata: {sqlite: {path}}`, built by `berth index rebuild` first: the rebuild row), **berth, no index** (`metadata: {enabled: false}`) and **Distribution**. ' +
      'Each cell: p50 / p99 latency in ms (requests sent one after another on one kept-alive connection, after 3 unmeasured ones; fewer requests when answers are slow: 20 s per cell on the filesystem, 30 s on S3), and the entries of the answer.',
  );
  for (const r of runs) {
    lines.push('');
    lines.push(`### ${r.storage === 's3' ? 'S3 (Ceph radosgw)' : 'Filesystem'}: ${r.spec.repositories.toLocaleString('en')} repositories, ${r.spec.tags.toLocaleString('en')} tags (one repository of ${r.spec.bigTags.toLocaleString('en')})${r.full ? '' : ' — a smaller set than the full 100,000 / 1,000,000'}`);
    lines.push('');
    const written = r.writeSeconds === undefined ? `reused from BENCH_SCALE_DIR (${r.objects.toLocaleString('en')} files)` : `${r.objects.toLocaleString('en')} ${r.storage === 's3' ? 'objects' : 'files'} written in ${fmt(r.writeSeconds, 0)} s (${Math.round(r.objects / r.writeSeconds)}/s${r.storage === 's3' ? `, signed PUTs (bench/lib/s3-put.ts), ${r.inFlight} in flight over as many connections${writeCpuText(r)}` : ', worker threads making plain synchronous fs calls'})`;
    lines.push(`Data set: ${written}.`);
    if (r.storage === 's3' && !r.full) lines.push('', `**The S3 set is a tenth of the full size** by default: at the PUT rate above the full 1.9 million objects take longer than a bench run. \`${S3_FULL_ENV}=1\` writes the full set.`);
    for (const n of r.notes) lines.push('', n);
    if (r.error) lines.push('', `**Failed: ${r.error.replace(/\n/g, ' ').slice(0, 600)}**`);
    if (r.rebuild) {
      const b = r.rebuild;
      lines.push('');
      lines.push(`Rebuild (\`berth index rebuild\` into a fresh SQLite file): ${b.repositories.toLocaleString('en')} repositories, ${b.manifests.toLocaleString('en')} manifests, ${b.tags.toLocaleString('en')} tags in ${fmt(b.seconds, 1)} s: **${b.rate.toLocaleString('en')} manifests/s** (${Math.round(b.tags / b.seconds).toLocaleString('en')} tags/s)${b.peakRssKiB ? `, peak RSS ${fmt(b.peakRssKiB / 1024, 0)} MiB` : ''}${b.cpuSeconds ? `; ${fmt(b.cpuSeconds, 0)} CPU s (user + system, so ${Math.round(b.manifests / b.cpuSeconds).toLocaleString('en')} manifests per CPU second of all its threads: the rate one otherwise idle core would sustain)` : ''}.`);
    }
    if (r.rows.length > 0) {
      lines.push('');
      lines.push('| row | berth, index | berth, no index | Distribution | target |');
      lines.push('|---|---|---|---|---|');
      for (const row of r.rows) {
        const target = row.listing ? `p99 ≤ ${LISTING_TARGET_MS} ms with the index: ${verdict(measured(row.cells.index)?.p99, (v) => v <= LISTING_TARGET_MS)}` : '';
        const factor = r.storage === 's3' && row.id === 'catalog-last' ? catalogFactor(row) : '';
        lines.push(`| ${row.title} | ${cellText(row.cells.index)} | ${cellText(row.cells.plain) || 'n/a'} | ${cellText(row.cells.distribution) || 'n/a'} | ${[target, factor].filter(Boolean).join('; ')} |`);
      }
      const differing = r.rows.filter((row) => {
        const [a, b] = [measured(row.cells.index), measured(row.cells.plain)];
        return a && b && a.bodyHash !== b.bodyHash && !row.id.startsWith('ui');
      });
      if (differing.length > 0) lines.push('', `Answers of berth with and without the index differ on: ${differing.map((d) => d.id).join(', ')} (first answer's sha256).`);
    }
    const rss = (v: 'index' | 'plain') => (r.rss[v] ? `${fmt(r.rss[v]!.idle, 0)} MiB at idle, ${fmt(r.rss[v]!.peak, 0)} MiB peak over the rows` : '–');
    if (r.rss.index || r.rss.plain) lines.push('', `berth's memory (RSS): with the index ${rss('index')}; without ${rss('plain')}.`);
    if (r.push) {
      const p = r.push;
      const [pi, pp, mi, mp] = [median(p.index.push), median(p.plain.push), median(p.index.manifest), median(p.plain.manifest)];
      lines.push('');
      lines.push(`Push (a config and a 4 KiB layer, POST + PUT each, then the manifest with a tag; ${p.pushes} pushes each into a new repository, alternating; median ms):`);
      lines.push('');
      lines.push('| | berth, index | berth, no index | difference | target |');
      lines.push('|---|---|---|---|---|');
      lines.push(`| whole push | ${fmt(pi)} | ${fmt(pp)} | ${fmt(pi - pp)} | ≤ ${PUSH_TARGET_MS} ms slower: ${verdict(pi - pp, (d) => d <= PUSH_TARGET_MS)} |`);
      lines.push(`| manifest PUT | ${fmt(mi)} | ${fmt(mp)} | ${fmt(mi - mp)} | |`);
    }
  }
  lines.push('');
  lines.push('Targets (issue 28):');
  lines.push('');
  for (const r of runs) {
    const where = r.storage === 's3' ? 'S3' : 'filesystem';
    const listing = r.rows.filter((row) => row.listing);
    const worst = Math.max(...listing.map((row) => measured(row.cells.index)?.p99 ?? NaN));
    if (listing.length > 0) lines.push(`- ${where}: every listing row p99 ≤ ${LISTING_TARGET_MS} ms with the index: ${verdict(worst, (v) => v <= LISTING_TARGET_MS)} (worst ${fmt(worst)} ms).`);
    if (r.storage === 's3') {
      const row = r.rows.find((x) => x.id === 'catalog-last');
      if (row) lines.push(`- S3 catalog last page ≥ ${S3_CATALOG_FACTOR}× faster than Distribution: ${catalogFactor(row) || 'not measured'}.`);
    }
    if (r.rebuild && r.storage === 'filesystem') lines.push(`- rebuild ≥ ${REBUILD_TARGET.toLocaleString('en')} manifests/s from the filesystem: ${verdict(r.rebuild.rate, (v) => v >= REBUILD_TARGET)} (${r.rebuild.rate.toLocaleString('en')}/s).`);
    if (r.push) {
      const d = median(r.push.index.push) - median(r.push.plain.push);
      lines.push(`- ${where}: push at most ${PUSH_TARGET_MS} ms slower with the index (median): ${verdict(d, (v) => v <= PUSH_TARGET_MS)} (${fmt(d)} ms).`);
    }
  }
}

/** what writing the S3 set cost in CPU, per object: which side (the writer or the store) is the limit */
function writeCpuText(r: IndexScaleRun): string {
  const cpu = r.writeCpu;
  if (!cpu || r.objects === 0) return '';
  const perObject = (seconds: number) => `${fmt((seconds * 1000) / r.objects)} ms per object`;
  return `; CPU: the writer ${fmt(cpu.writer, 0)} s (${perObject(cpu.writer)})${cpu.store === undefined ? '' : `, radosgw and the OSD ${fmt(cpu.store, 0)} s (${perObject(cpu.store)})`}`;
}

function verdict(value: number | undefined, ok: (v: number) => boolean): string {
  if (value === undefined || Number.isNaN(value)) return 'not measured';
  return ok(value) ? '**met**' : '**not met**';
}

function catalogFactor(row: LatencyRow): string {
  const b = measured(row.cells.index);
  const d = row.cells.distribution;
  if (!b || !d) return '';
  // Distribution abandoned: the factor is at least the time waited over berth's
  const [distributionMs, atLeast] = d.kind === 'measured' ? [d.p50, false] : d.kind === 'timeout' ? [d.afterMs, true] : [NaN, false];
  if (Number.isNaN(distributionMs)) return '';
  const factor = distributionMs / b.p50;
  return `${atLeast ? 'at least ' : ''}${fmt(factor, 0)}× faster than Distribution (p50): ${factor >= S3_CATALOG_FACTOR ? '**met**' : '**not met**'}`;
}
