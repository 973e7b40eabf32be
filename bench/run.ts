/**
 * `npm run bench`: berth against CNCF Distribution 2.8 (Debian's docker-registry) on this machine.
 *
 * Starts both registries as child processes on 127.0.0.1 (filesystem storage, a root each under one
 * temp directory), writes the read fixtures straight into both roots, measures every scenario on
 * both in alternating order for several rounds, and writes bench/results/<date>.md with a chart of
 * the ratios (<date>.svg, and <date>.png when rsvg-convert is installed).
 *
 * Environment:
 *   BENCH_QUICK=1          a short smoke run (small blobs, 1 s autocannon runs, one round)
 *   BENCH_ONLY=a,b         only the scenarios whose id starts with one of these (e.g. push,skopeo)
 *   BENCH_CPU_PROFILE=DIR  run berth with node --cpu-prof, writing the profile into DIR on exit
 *                          (bench/profile-top.ts summarises it)
 *   BENCH_BERTH=tsx       run berth from src/ through tsx instead of compiling it first
 *   BENCH_OUT=FILE         write the Markdown here instead of bench/results/<date>.md
 *
 * Needs the Debian packages docker-registry and skopeo, and librsvg2-bin for the PNG chart.
 */
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { rmSync, statSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, release, tmpdir, totalmem } from 'node:os';
import { basename, dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PatternBlob, REPO_ROOT } from '../test/helpers/berth-process.js';
import { writeOCILayout } from '../test/helpers/oci-layout.js';
import { toolAvailable } from '../test/helpers/tools.js';
import { linkBlob, PULL_REPO, smallImage, writeBlobFile, writeSmallFixtures } from './lib/fixtures.js';
import { measureLimits } from './lib/limits.js';
import { measure, settle } from './lib/process-stats.js';
import { buildBerth, distributionVersion, startBerth, startDistribution, type Registry, type RegistryName } from './lib/registries.js';
import { renderMarkdown, renderSvg, toJSON, writeChart, type Machine, type Report, type ScenarioResult } from './lib/report.js';
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
const CONNECTIONS = [32, 128];
const LAYERS = 20;

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
    berthRun: fromSource ? 'from src/ through tsx: `node --import tsx src/cli.ts serve`' : 'compiled: `node .tmp/bench-dist/cli.js serve`',
    loadStart: loadavg(),
    loadEnd: [],
    started: new Date(),
    finished: new Date(),
  };
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
  const regs: Partial<Record<RegistryName, Registry>> = {};
  const results: ScenarioResult[] = [];
  let limits;
  try {
    log('physical limits: sha256, disk, loopback');
    limits = await measureLimits(work, settings.limitBytes);
    log(`limits: sha256 ${limits.sha256.toFixed(0)} MiB/s, disk write ${limits.diskWrite.toFixed(0)} MiB/s, read ${limits.diskReadCached.toFixed(0)} (cached) / ${limits.diskReadDirect?.toFixed(0) ?? '-'} (direct) MiB/s, loopback ${limits.loopback.toFixed(0)} MiB/s`);

    log('generating blobs and their digests');
    const big = new PatternBlob(settings.big);
    const eight = Array.from({ length: 8 }, () => new PatternBlob(settings.each));
    for (const blob of [big, ...eight]) blob.digest();
    const image = smallImage();
    const small: SmallSettings = { image, connections: CONNECTIONS, duration: settings.duration, warmup: settings.warmup, rounds: settings.smallRounds, tags: settings.tags, repos: settings.repos };
    const layerSizes = Array.from({ length: LAYERS }, (_, i) => settings.layerSize(i));
    const layout = await writeOCILayout(join(work, 'oci-layout'), { layerSizes });
    const layoutBytes = await imageBytes(layout.dir, layout.blobDigests);

    const scenarios = [
      ...blobScenarios({ big, eight, rounds: settings.blobRounds }),
      // skopeo before the listings, whose answers grow berth's heap (RSS stays up afterwards)
      ...skopeoScenarios({ image: layout, bytes: layoutBytes, rounds: settings.skopeoRounds, work }),
      ...smallScenarios(small),
    ].filter((s) => wanted(s.id));

    const roots = { berth: join(work, 'berth'), distribution: join(work, 'distribution') };
    log(`writing read fixtures (${settings.tags} tags, ${settings.repos} repositories) into both roots`);
    for (const root of Object.values(roots)) await writeSmallFixtures(root, image, { tags: settings.tags, repos: settings.repos });

    if (profileDir) await mkdir(profileDir, { recursive: true });
    const cli = fromSource ? undefined : (log('compiling berth (tsc -p tsconfig.build.json --outDir .tmp/bench-dist)'), buildBerth());
    regs.berth = await startBerth(roots.berth, cli, { cpuProfileDir: profileDir, fromSource });
    regs.distribution = await startDistribution(roots.distribution);
    log(`berth ${regs.berth.url} (pid ${regs.berth.pid}), Distribution ${regs.distribution.url} (pid ${regs.distribution.pid})`);
    const both = regs as Record<RegistryName, Registry>;
    small.tagsPerResponse = await tagsPerResponse(Object.values(both));

    let pullReady = false;
    for (const scenario of scenarios) {
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
  } finally {
    await Promise.allSettled(Object.values(regs).map((r) => r.stop()));
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
  const report: Report = {
    machine,
    limits,
    results,
    quick,
    notes,
    chartFile: `${basename(stem)}.png`,
    command: [
      `${quick ? 'BENCH_QUICK=1 ' : ''}${only.length ? `BENCH_ONLY=${only.join(',')} ` : ''}npm run bench   # = tsx bench/run.ts`,
      `# berth:        ${fromSource ? 'node --import tsx src/cli.ts' : 'tsc -p tsconfig.build.json --outDir .tmp/bench-dist && node .tmp/bench-dist/cli.js'} serve <config: filesystem root, 127.0.0.1:<port>, log level warn, access log off>`,
      `# Distribution: /usr/bin/docker-registry serve <config: filesystem root, 127.0.0.1:<port>, log level warn, access log off>`,
      `# small requests: autocannon({ url, method, connections: 32 | 128, duration: ${settings.duration} }) from the bench process`,
      `# skopeo:        skopeo copy --dest-tls-verify=false oci:<layout>:latest docker://<host>/bench/skopeo/in-r<N>:v1`,
      `#                skopeo copy --src-tls-verify=false docker://<host>/bench/skopeo/out:v1 dir:<tmp>`,
    ].join('\n'),
    settings: {
      'big blob': `${settings.big / MiB} MiB`,
      'concurrent blobs': `8 × ${settings.each / MiB} MiB`,
      'blob rounds': String(settings.blobRounds),
      'autocannon': `${settings.duration} s per run, ${settings.warmup} s warm-up per endpoint, ${settings.smallRounds} rounds, connections ${CONNECTIONS.join(' and ')}`,
      'fixtures': `${settings.tags} tags in bench/tags, ${settings.repos} repositories bench/catalog/rNNNNN (each with _layers and _manifests)`,
      'skopeo image': `${LAYERS} layers (random data, gzip), ${settings.skopeoRounds} rounds`,
      'peak RSS': 'VmHWM of the registry process, reset (clear_refs 5) before each measurement',
      'CPU s': 'utime + stime of the registry process (all threads), difference over the measurement',
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
