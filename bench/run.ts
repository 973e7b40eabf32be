/**
 * `npm run bench`: berth against CNCF Distribution 2.8 (Debian's docker-registry) on this machine.
 *
 * Filesystem storage first: starts both registries as child processes on 127.0.0.1 (a root each
 * under one temp directory), writes the read fixtures straight into both roots, measures every
 * scenario on both in alternating order for several rounds. Then S3 storage: starts the throw-away
 * Ceph radosgw of the S3 tests (test/helpers/ceph.ts), both registries again on one bucket (a key
 * prefix each), and measures a subset (blob push and pull with smaller blobs, a 307 redirect pull,
 * manifest GET, tags/list). Writes bench/results/<date>.md with a chart of the ratios (<date>.svg,
 * and <date>.png when rsvg-convert is installed). Without the Ceph tools the S3 rows are skipped,
 * loudly, on the terminal and on the page.
 *
 * Environment:
 *   BENCH_QUICK=1          a short smoke run (small blobs, 1 s autocannon runs, one round)
 *   BENCH_ONLY=a,b         only the scenarios whose id starts with one of these (e.g. push,skopeo;
 *                          s3 for every S3 row, catalog-last for the deep catalog page, gc for
 *                          the offline garbage collection of a 3,000-repository root and gc-scale
 *                          for berth's on 1,000 and 10,000 repositories, proxy for
 *                          the pull-through cache rows, replication for berth's pull replication
 *                          against skopeo sync and push replication, bench/lib/replication.ts)
 *   BENCH_CPU_PROFILE=DIR  run berth with node --cpu-prof, writing the profile into DIR on exit
 *                          (bench/profile-top.ts summarises it)
 *   BENCH_NODE_ARGS='...'  more node flags for berth (e.g. --max-semi-space-size=1, to measure V8 settings)
 *   BENCH_BERTH=tsx       run berth from src/ through tsx instead of compiling it first
 *   BENCH_OUT=FILE         write the Markdown here instead of bench/results/<date>.md
 *   BENCH_QUIET=1          the page says nothing else ran on the machine (say it only when true)
 *   BENCH_RECORD_PULLS=1   berth records last-pull times (retention's notpulledfor), to measure their cost
 *   BENCH_WORKERS=N        berth runs N worker processes (http.workers); run once with 1 and once with 2
 *                          to compare (the measured CPU and RSS are the primary's, not the workers')
 *   BENCH_SCALE_DIR=DIR    keep the metadata index rows' filesystem data set (1,000,000 tags) here between
 *                          runs (BENCH_ONLY=index, index-fs or index-s3; bench/lib/index-scale.ts)
 *   BENCH_SCALE_S3_FULL=1  the index rows on S3 at full size instead of a tenth of it
 *   BENCH_ONLINE_GC_SIZES=1000,10000  repositories of the online collection rows on S3
 *                          (BENCH_ONLY=online-gc-s3; bench/lib/gc-online-scale.ts)
 *   BENCH_ONLINE_GC_LATENCY_MS=N  those rows with N ms added to each S3 request (a store farther away)
 *
 * Needs the Debian packages docker-registry, skopeo and time (GNU time, for the gc row's peak RSS); ceph-mon, ceph-osd, radosgw and ceph-common
 * for the S3 rows (skipped without them); haproxy for s3-ha-8x (berth behind HAProxy, one instance
 * against two; bench/lib/scaling.ts); librsvg2-bin for the PNG chart.
 */
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { rmSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, release, tmpdir, totalmem } from 'node:os';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PatternBlob, readProcessMemory, REPO_ROOT } from '../test/helpers/berth-process.js';
import { writeOCILayout } from '../test/helpers/oci-layout.js';
import { toolAvailable } from '../test/helpers/tools.js';
import { linkBlob, PULL_REPO, smallImage, writeBlobFile, writeSmallFixtures } from './lib/fixtures.js';
import { measureGc, measureGcScale, type GcRow, type GcScaleRun } from './lib/gc.js';
import { measureLimits } from './lib/limits.js';
import { PROXY_ROW_IDS, proxyScenarios, startProxyPair, type ProxySettings } from './lib/proxy.js';
import { measure, settle } from './lib/process-stats.js';
import { buildBerth, distributionVersion, filesystemBackend, s3Backend, S3_CHUNK_SIZE, startBerth, startDistribution, type Backend, type Registry, type RegistryName } from './lib/registries.js';
import { renderMarkdown, renderSvg, toJSON, writeChart, type Machine, type Report, type S3Part, type ScenarioResult } from './lib/report.js';
import { cephVersion, missingCephTool, startS3Store, type S3Store } from './lib/s3.js';
import { measureReplication, renderReplication } from './lib/replication.js';
import { measureScaling, SCALING_ID, type ScalingRow } from './lib/scaling.js';
import { INDEX_SCALE_IDS, measureIndexScale, type IndexScaleRun } from './lib/index-scale.js';
import { measureOnlineGc, ONLINE_GC_ID, type OnlineGcRun } from './lib/gc-online-scale.js';
import { blobScenarios, skopeoScenarios, smallScenarios, tagsPerResponse, type Scenario, type SmallSettings } from './lib/scenarios.js';
import { MiB } from './lib/stats.js';

const run = promisify(execFile);
const quick = process.env.BENCH_QUICK === '1';
const only = (process.env.BENCH_ONLY ?? '').split(',').map((s) => s.trim()).filter(Boolean);
const profileDir = process.env.BENCH_CPU_PROFILE ? resolve(process.env.BENCH_CPU_PROFILE) : undefined;
const fromSource = process.env.BENCH_BERTH === 'tsx';
const BENCH_DIR = dirname(fileURLToPath(import.meta.url));

const settings = quick
  ? { big: 64 * MiB, each: 8 * MiB, blobRounds: 1, duration: 1, warmup: 0.5, smallRounds: 1, tags: 1000, repos: 1000, layerSize: (_i: number) => 64 * 1024, skopeoRounds: 1, limitBytes: 128 * MiB }
  : { big: 1024 * MiB, each: 128 * MiB, blobRounds: 3, duration: 3, warmup: 1, smallRounds: 2, tags: 10_000, repos: 10_000, layerSize: (i: number) => ((i % 5) + 1) * MiB, skopeoRounds: 3, limitBytes: 1024 * MiB };
/**
 * S3: smaller blobs than on the filesystem (the store is several times slower than the disk and
 * the whole run has 15 minutes), fewer tags (Distribution lists every tag on each request, 1000 per
 * ListObjectsV2 page). The memstore OSD keeps objects in RAM: its cap leaves room for what the
 * pushes write before radosgw's garbage collector (run after each push scenario) frees it.
 */
const s3Settings = quick
  ? { big: 32 * MiB, each: 4 * MiB, blobRounds: 1, tags: 100, memstoreBytes: 4 * 1024 * MiB }
  : { big: 128 * MiB, each: 16 * MiB, blobRounds: 3, tags: 1000, memstoreBytes: 8 * 1024 * MiB };
const CONNECTIONS = [32, 128];
/** the S3 small-request rows run at one connection count */
const S3_CONNECTIONS = 32;
const LAYERS = 20;
/** the garbage-collection row's root: repositories of three images, a third of them deleted */
const GC_REPOSITORIES = 3000;

const wanted = (id: string) => only.length === 0 || only.some((p) => id.startsWith(p));

function log(message: string): void {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

function git(...args: string[]): string {
  try {
    return execFileSync('git', args, { cwd: REPO_ROOT, encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}

function machineStart(): Machine {
  const c = cpus();
  return {
    cpu: c[0]?.model ?? 'unknown',
    cores: c.length,
    memory: totalmem(),
    kernel: release(),
    node: process.version,
    distribution: distributionVersion(),
    berthCommit: `${git('rev-parse', '--short', 'HEAD')}${git('status', '--porcelain', '--', 'src') ? ' (with uncommitted changes under src/)' : ''}`,
    berthRun: fromSource ? 'from src/ through tsx: `node --import tsx src/cli.ts serve`' : 'compiled and bundled as `npm run build` does: `node .tmp/bench-bundle/cli.js serve`',
    loadStart: loadavg(),
    loadEnd: [],
    quiet: process.env.BENCH_QUIET === '1',
    started: new Date(),
    finished: new Date(),
  };
}

function skipBanner(missing: string): void {
  const banner = '!'.repeat(100);
  log(`${banner}\n  S3 ROWS SKIPPED: ${missing}\n  (the S3 rows need the Ceph packages of the S3 tests; the results page says so)\n${banner}`);
}

/** runs one scenario: warm-up, then `rounds` rounds over both registries in alternating order */
async function runScenario(scenario: Scenario, regs: Record<RegistryName, Registry>): Promise<ScenarioResult> {
  const result: ScenarioResult = { scenario, samples: { berth: [], distribution: [] } };
  try {
    for (const reg of Object.values(regs)) await scenario.warmup?.(reg);
    for (let round = 0; round < scenario.rounds; round++) {
      const order: RegistryName[] = round % 2 === 0 ? ['berth', 'distribution'] : ['distribution', 'berth'];
      for (const name of order) {
        const reg = regs[name];
        // both idle: neither the other registry nor this one is still busy with the last run
        for (const r of Object.values(regs)) {
          const waited = await settle(r.pid);
          if (waited > 2000) log(`waited ${(waited / 1000).toFixed(1)} s for ${r.name} to become idle`);
        }
        const { value, usage } = await measure(reg.pid, () => scenario.run(reg, round));
        result.samples[name].push({ outcome: value, usage });
        await scenario.cleanup?.(reg, round);
        log(`${scenario.id} round ${round + 1}/${scenario.rounds} ${name}: ${value.throughput.toFixed(1)} ${scenario.unit}, ${(usage.peakRss / MiB).toFixed(0)} MiB peak, ${usage.cpu.toFixed(2)} CPU s`);
      }
    }
  } catch (err) {
    result.error = err instanceof Error ? err.message : String(err);
    log(`${scenario.id} FAILED: ${result.error}`);
  }
  return result;
}

async function main(): Promise<number> {
  for (const tool of ['docker-registry', 'skopeo']) {
    if (!toolAvailable(tool) && !toolAvailable(`/usr/bin/${tool}`)) {
      console.error(`bench: ${tool} is missing (apt-get install -y ${tool})`);
      return 2;
    }
  }
  const machine = machineStart();
  const notes: string[] = [];
  log(`${quick ? 'quick smoke run' : 'full run'}; load average ${machine.loadStart.map((l) => l.toFixed(2)).join(' ')}`);

  const work = await mkdtemp(join(tmpdir(), 'berth-bench-'));
  // removed however the run ends (the registries are killed by the exit guards of the helpers)
  process.on('exit', () => rmSync(work, { recursive: true, force: true }));
  const running: Registry[] = [];
  const results: ScenarioResult[] = [];
  let gc: GcRow | undefined;
  let gcScale: GcScaleRun[] | undefined;
  let scaling: ScalingRow | undefined;
  let indexScale: IndexScaleRun[] | undefined;
  let onlineGc: OnlineGcRun[] | undefined;
  let store: S3Store | undefined;
  let s3: S3Part | undefined;
  let limits;
  try {
    log('physical limits: sha256, disk, loopback');
    limits = await measureLimits(work, settings.limitBytes);
    log(`limits: sha256 ${limits.sha256.toFixed(0)} MiB/s, disk write ${limits.diskWrite.toFixed(0)} MiB/s, read ${limits.diskReadCached.toFixed(0)} (cached) / ${limits.diskReadDirect?.toFixed(0) ?? '-'} (direct) MiB/s, loopback ${limits.loopback.toFixed(0)} MiB/s`);

    log('generating blobs and their digests');
    const big = new PatternBlob(settings.big);
    const eight = Array.from({ length: 8 }, () => new PatternBlob(settings.each));
    const s3big = new PatternBlob(s3Settings.big);
    const s3eight = Array.from({ length: 8 }, () => new PatternBlob(s3Settings.each));
    const image = smallImage();
    const small: SmallSettings = { image, connections: CONNECTIONS, duration: settings.duration, warmup: settings.warmup, rounds: settings.smallRounds, tags: settings.tags, repos: settings.repos };
    const s3small: SmallSettings = { ...small, storage: 's3', connections: [S3_CONNECTIONS], tags: s3Settings.tags, endpoints: ['manifest-get', 'tags-list'] };
    const layerSizes = Array.from({ length: LAYERS }, (_, i) => settings.layerSize(i));
    const layout = await writeOCILayout(join(work, 'oci-layout'), { layerSizes });
    const layoutBytes = await imageBytes(layout.dir, layout.blobDigests);

    const fsScenarios = [
      ...blobScenarios({ big, eight, rounds: settings.blobRounds }),
      // skopeo before the listings, whose answers grow berth's heap (RSS stays up afterwards)
      ...skopeoScenarios({ image: layout, bytes: layoutBytes, rounds: settings.skopeoRounds, work }),
      ...smallScenarios(small),
    ].filter((s) => wanted(s.id));
    const s3Scenarios = [
      // deleted objects stay in the memstore OSD's RAM until radosgw's garbage collector runs
      ...blobScenarios({ big: s3big, eight: s3eight, rounds: s3Settings.blobRounds, storage: 's3', afterPushes: () => store?.reclaim() ?? Promise.resolve() }),
      ...smallScenarios(s3small),
    ].filter((s) => wanted(s.id));
    // said at the start too, so nobody waits ten minutes to learn that half the rows will be missing
    const s3Wanted = s3Scenarios.length > 0 || wanted(SCALING_ID);
    const cephMissing = s3Wanted ? missingCephTool() : undefined;
    if (cephMissing) skipBanner(cephMissing);
    const used = (scenarios: Scenario[], blobs: PatternBlob[]) => (scenarios.some((s) => s.group === 'blob') ? blobs : []);
    for (const blob of [...used(fsScenarios, [big, ...eight]), ...used(s3Scenarios, [s3big, ...s3eight])]) blob.digest();

    if (profileDir) await mkdir(profileDir, { recursive: true });
    const cli = fromSource ? undefined : (log('compiling berth (tsc -p tsconfig.build.json --outDir .tmp/bench-dist, bundled into .tmp/bench-bundle)'), buildBerth());
    const start = async (backends: Record<RegistryName, Backend>, what: string): Promise<Record<RegistryName, Registry>> => {
      const berth = await startBerth(backends.berth, cli, { cpuProfileDir: profileDir, fromSource });
      running.push(berth);
      const distribution = await startDistribution(backends.distribution);
      running.push(distribution);
      log(`${what}: berth ${berth.url} (pid ${berth.pid}), Distribution ${distribution.url} (pid ${distribution.pid})`);
      // idle RSS: started, answered GET /v2/ (the start-up check), nothing else yet
      await Promise.all([settle(berth.pid), settle(distribution.pid)]);
      const idle = (pid: number) => (readProcessMemory(pid).rss / MiB).toFixed(0);
      notes.push(`${what}: RSS at idle after start (one GET /v2/): berth ${idle(berth.pid)} MiB, Distribution ${idle(distribution.pid)} MiB.`);
      return { berth, distribution };
    };
    const stopAll = async () => {
      await Promise.allSettled(running.splice(0).map((r) => r.stop()));
    };

    // ---- filesystem storage
    if (fsScenarios.length > 0) {
      const roots = { berth: join(work, 'berth'), distribution: join(work, 'distribution') };
      log(`writing read fixtures (${settings.tags} tags, ${settings.repos} repositories) into both roots`);
      for (const root of Object.values(roots)) await writeSmallFixtures(root, image, { tags: settings.tags, repos: settings.repos });
      const both = await start({ berth: filesystemBackend(roots.berth), distribution: filesystemBackend(roots.distribution) }, 'filesystem storage');
      small.tagsPerResponse = await tagsPerResponse(Object.values(both));

      let pullReady = false;
      for (const scenario of fsScenarios) {
        if (scenario.id.startsWith('pull') && !pullReady) {
          // after the pushes, so a pushed blob never meets the same blob already stored
          log('writing the pull fixtures (hard links into both roots)');
          for (const [i, blob] of [big, ...eight].entries()) {
            const file = join(work, 'pull-fixtures', `blob-${i}`);
            await writeBlobFile(file, blob);
            for (const root of Object.values(roots)) await linkBlob(root, PULL_REPO, blob.digest(), file);
          }
          pullReady = true;
        }
        log(`${scenario.id}: ${scenario.title}`);
        results.push(await runScenario(scenario, both));
      }
      const t0 = Date.now();
      await stopAll();
      // the S3 phase needs neither the roots nor their page cache
      await run('rm', ['-rf', roots.berth, roots.distribution, join(work, 'pull-fixtures')]).catch(() => undefined);
      log(`filesystem registries stopped and their roots removed in ${((Date.now() - t0) / 1000).toFixed(0)} s`);
    }

    // ---- pull-through cache: both registries as mirrors of a third, caches on the filesystem
    const proxyWanted = PROXY_ROW_IDS.filter(wanted);
    if (proxyWanted.length > 0) {
      const rounds = settings.blobRounds;
      log(`pull-through cache: writing ${rounds} rounds of content for the upstream`);
      const images = [];
      for (let round = 0; round < rounds; round++) images.push(await writeOCILayout(join(work, `proxy-layout-${round}`), { layerSizes }));
      const proxySettings: ProxySettings = {
        images,
        imageBytes: await imageBytes(images[0].dir, images[0].blobDigests),
        blobs: Array.from({ length: rounds }, () => new PatternBlob(settings.big)),
        work,
      };
      const pair = await startProxyPair(proxySettings, cli, { cpuProfileDir: profileDir, fromSource });
      try {
        log(`pull-through cache: upstream ${pair.upstream.url}, berth mirror ${pair.mirrors.berth.url}, Distribution mirror ${pair.mirrors.distribution.url}`);
        for (const scenario of proxyScenarios(proxySettings).filter((s) => wanted(s.id))) {
          log(`${scenario.id}: ${scenario.title}`);
          results.push(await runScenario(scenario, pair.mirrors));
        }
      } finally {
        await pair.stop();
      }
    }

    // ---- S3 storage: both registries on one bucket of a throw-away Ceph radosgw
    if (s3Wanted) {
      if (cephMissing) {
        s3 = { store: 'Ceph radosgw', skipped: cephMissing };
        skipBanner(cephMissing);
      } else {
        try {
          log(`starting the Ceph store (memstore OSD, radosgw on 127.0.0.1)`);
          store = await startS3Store(s3Settings.memstoreBytes);
          s3 = { store: `${cephVersion()}, single node on 127.0.0.1, one memstore OSD (objects in RAM)` };
          const prefixes = { berth: store.prefix('berth'), distribution: store.prefix('distribution') };
          if (s3Scenarios.some((s) => s.group === 'small')) {
            log(`writing S3 read fixtures (${s3Settings.tags} tags) under both prefixes`);
            await Promise.all(Object.values(prefixes).map((prefix) => prefix.writeSmallFixtures(image, s3Settings.tags)));
          }
          const s3store = store;
          const backends = (redirect: boolean) => ({
            berth: s3Backend(s3store, prefixes.berth, redirect),
            distribution: s3Backend(s3store, prefixes.distribution, redirect),
          });
          const streaming = s3Scenarios.length > 0 ? await start(backends(false), 'S3 storage, redirect disabled') : undefined;
          const redirecting = s3Scenarios.some((s) => s.instance === 'redirect') ? await start(backends(true), 'S3 storage, redirects') : undefined;
          if (streaming && s3Scenarios.some((s) => s.group === 'small')) s3small.tagsPerResponse = await tagsPerResponse(Object.values(streaming));

          let pullReady = false;
          for (const scenario of s3Scenarios) {
            if (scenario.id.startsWith('s3-pull') && !pullReady) {
              log('writing the S3 pull fixtures (PutObject under the berth prefix, CopyObject to the Distribution prefix)');
              for (const blob of [s3big, ...s3eight]) {
                await prefixes.berth.putBlob(PULL_REPO, blob);
                await prefixes.distribution.copyBlob(prefixes.berth, PULL_REPO, blob.digest());
              }
              pullReady = true;
            }
            log(`${scenario.id}: ${scenario.title}`);
            results.push(await runScenario(scenario, scenario.instance === 'redirect' && redirecting ? redirecting : streaming!));
          }
          if (wanted(SCALING_ID)) {
            await stopAll();
            if (toolAvailable('haproxy')) {
              log(`${SCALING_ID}: berth behind HAProxy, one instance against two`);
              const blobs = { pushed: Array.from({ length: 8 }, () => new PatternBlob(s3Settings.each)), pulled: s3eight };
              scaling = await measureScaling(s3store, cli, blobs, s3Settings.blobRounds, { cpuProfileDir: profileDir, fromSource }, log);
            } else {
              notes.push(`**${SCALING_ID} was skipped: haproxy is missing** (apt-get install -y haproxy).`);
            }
          }
        } catch (err) {
          // the store or a registry did not start: every S3 row not run yet is a failure
          const message = err instanceof Error ? err.message : String(err);
          log(`S3 storage FAILED: ${message}`);
          for (const scenario of s3Scenarios) {
            if (!results.some((r) => r.scenario === scenario)) results.push({ scenario, samples: { berth: [], distribution: [] }, error: `S3 setup failed: ${message}` });
          }
        } finally {
          await stopAll();
          await store?.stop();
          store = undefined;
        }
      }
    }
    // ---- offline garbage collection: a command, not a server; one fresh copy of the root per run
    if (wanted('gc')) {
      await stopAll();
      gc = await measureGc(work, cli ?? buildBerth(), quick ? 300 : GC_REPOSITORIES, quick ? 1 : 3, log);
    }
    if (wanted('gc-scale')) gcScale = await measureGcScale(work, cli ?? buildBerth(), quick ? [100, 1000] : [1000, 10_000], log);
    if (wanted('replication')) notes.push(...renderReplication(await measureReplication(work, cli, quick ? 40 : 200, quick ? 64 : 1024, log)));
    const indexStorages = (['filesystem', 's3'] as const).filter((s) => wanted(INDEX_SCALE_IDS[s]));
    if (indexStorages.length > 0) indexScale = await measureIndexScale({ work, cli, quick, log, storages: [...indexStorages], s3Missing: indexStorages.includes('s3') ? missingCephTool() : undefined });
    if (wanted(ONLINE_GC_ID)) {
      const cephMissingForGc = missingCephTool();
      if (cephMissingForGc) skipBanner(cephMissingForGc);
      onlineGc = await measureOnlineGc({ work, cli: cli ?? buildBerth(), quick, log, cephMissing: cephMissingForGc });
    }
  } finally {
    await Promise.allSettled(running.map((r) => r.stop()));
    await store?.stop();
    log('removing the temp roots');
    // rm(1) is many times faster than fs.rm on tens of thousands of directories
    await run('rm', ['-rf', work]).catch(() => rm(work, { recursive: true, force: true }));
  }

  machine.loadEnd = loadavg();
  machine.finished = new Date();
  const date = machine.started.toISOString().slice(0, 10);
  const out = process.env.BENCH_OUT ? resolve(process.env.BENCH_OUT) : join(BENCH_DIR, 'results', `${date}${quick ? '-quick' : ''}.md`);
  await mkdir(dirname(out), { recursive: true });
  const stem = out.replace(/\.md$/, '');
  if (s3?.skipped) notes.push(`**The S3 rows were skipped: ${s3.skipped}.** Install the Ceph packages (ceph-mon ceph-osd radosgw ceph-common) to measure them.`);
  const s3Ran = s3 !== undefined && !s3.skipped;
  const report: Report = {
    machine,
    s3,
    limits,
    results,
    gc,
    gcScale,
    scaling,
    indexScale,
    onlineGc,
    quick,
    notes,
    chartFile: `${basename(stem)}.png`,
    command: [
      `${quick ? 'BENCH_QUICK=1 ' : ''}${only.length ? `BENCH_ONLY=${only.join(',')} ` : ''}npm run bench   # = tsx bench/run.ts`,
      `# berth:        ${fromSource ? 'node --import tsx src/cli.ts' : 'tsc -p tsconfig.build.json --outDir .tmp/bench-dist && node .tmp/bench-dist/server-bundle.js .tmp/bench-bundle && node .tmp/bench-bundle/cli.js'} serve <config: filesystem root, 127.0.0.1:<port>, log level warn, access log off>`,
      `# Distribution: /usr/bin/docker-registry serve <config: filesystem root, 127.0.0.1:<port>, log level warn, access log off>`,
      `# small requests: autocannon({ url, method, connections: 32 | 128, duration: ${settings.duration} }) from the bench process`,
      `# skopeo:        skopeo copy --dest-tls-verify=false oci:<layout>:latest docker://<host>/bench/skopeo/in-r<N>:v1`,
      `#                skopeo copy --src-tls-verify=false docker://<host>/bench/skopeo/out:v1 dir:<tmp>`,
      ...(s3Ran
        ? [
            `# S3 store:     bash test/helpers/ceph-s3.sh start <dir> <port>   (MEMSTORE_BYTES=${s3Settings.memstoreBytes}; the S3 tests' store)`,
            `# S3 registries: the same commands with storage.s3 { regionendpoint: http://127.0.0.1:<port>, bucket, rootdirectory: /berth | /distribution, chunksize: ${S3_CHUNK_SIZE}, v4auth: true }`,
            `#                and storage.redirect.disable: true (s3-pull-redirect: a second instance of each with redirects on)`,
          ]
        : []),
    ].join('\n'),
    settings: {
      'big blob': `${settings.big / MiB} MiB`,
      'concurrent blobs': `8 × ${settings.each / MiB} MiB`,
      'blob rounds': `${settings.blobRounds}, after one unmeasured warm-up run of the row on each registry`,
      'autocannon': `${settings.duration} s per run, ${settings.warmup} s warm-up per endpoint, ${settings.smallRounds} rounds, connections ${CONNECTIONS.join(' and ')}`,
      'fixtures': `${settings.tags} tags in bench/tags, ${settings.repos} repositories bench/catalog/rNNNNN (each with _layers and _manifests)`,
      'skopeo image': `${LAYERS} layers (random data, gzip), ${settings.skopeoRounds} rounds`,
      'peak RSS': 'VmHWM of the registry process, reset (clear_refs 5) before each measurement',
      'CPU s': 'utime + stime of the registry process (all threads), difference over the measurement',
      ...(s3Ran
        ? {
            'S3 blobs': `${s3Settings.big / MiB} MiB, 8 × ${s3Settings.each / MiB} MiB concurrent, ${s3Settings.blobRounds} rounds`,
            'S3 small requests': `manifest GET and tags/list at ${S3_CONNECTIONS} connections; ${s3Settings.tags} tags in bench/tags`,
          }
        : {}),
      ...(only.length ? { 'only': only.join(', ') } : {}),
      ...(profileDir ? { 'CPU profile': 'berth ran with --cpu-prof (slower than without)' } : {}),
    },
  };
  if (profileDir) notes.push('berth ran with --cpu-prof: its figures include the profiler overhead.');
  const svg = renderSvg(report);
  const png = await writeChart(`${stem}.svg`, `${stem}.png`, svg);
  if (!png) {
    report.chartFile = `${basename(stem)}.svg`;
    notes.push('rsvg-convert (Debian package librsvg2-bin) is missing: the chart is SVG only.');
  }
  await writeFile(out, renderMarkdown(report));
  // the raw samples, so the page and the chart can be rendered again (bench/render.ts)
  await writeFile(`${stem}.json`, JSON.stringify(toJSON(report), null, 1));
  log(`results: ${relative(process.cwd(), out)}${png ? ` and ${relative(process.cwd(), stem)}.png` : ' (SVG chart only: rsvg-convert is missing)'}`);
  return results.some((r) => r.error) ? 1 : 0;
}

async function imageBytes(dir: string, digests: string[]): Promise<number> {
  let total = 0;
  for (const d of digests) total += statSync(join(dir, 'blobs/sha256', d.slice(7))).size;
  return total;
}

main().then(
  (code) => process.exit(code),
  (err) => {
    console.error(err);
    process.exit(1);
  },
);
