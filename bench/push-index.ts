/**
 * `npx tsx bench/push-index.ts [PUSHES] [REPOSITORIES]`: what the metadata index adds to a push
 * (issue 28's target: at most 2 ms, median). Starts compiled berth twice on fresh filesystem roots,
 * with the index (SQLite, audit on: the defaults) and without (`metadata: {enabled: false}`), and
 * pushes PUSHES small images (default 150) into each, alternating, each into a new repository: a
 * config and a 4 KiB layer (POST + PUT each), then the manifest with a tag, as the index-scale
 * push row does. REPOSITORIES (default 0) first fills both roots with that many repositories (ten
 * tags each, written into the layout by bench/lib/scale-data.ts); the script waits for the index's
 * start-up build, the reconciler's first pass and every process to go idle before pushing. Prints
 * the medians of the whole push and of its manifest PUT, and each process's CPU ms per push (on a
 * loaded machine the better figure: a ms of CPU costs several of wall time there).
 *
 * BENCH_BERTH_CLIS=`label=/path/cli.js,...` compares several builds (e.g. a checkout of main's)
 * in the same minutes: each runs both ways, all pushes interleaved. Default: this checkout,
 * compiled into .tmp/bench-dist. BENCH_CPU_PROFILE=DIR: each process writes a V8 CPU profile
 * into DIR/<label>-<way>/ when it exits (bench/profile-top.ts reads them). BENCH_PUSH_CONFIGS
 * adds ways berth runs, as JSON: `{"noaudit": {"audit": {"enabled": false}}}`.
 */
import { cpus, loadavg, tmpdir } from 'node:os';
import { mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { buildBerth, filesystemBackend, startBerth, type Registry } from './lib/registries.js';
import { cpuSeconds, settle } from './lib/process-stats.js';
import { pushImage } from './lib/index-scale.js';
import { writeFilesystemSet } from './lib/scale-data.js';
import { median } from './lib/stats.js';

const pushes = Number(process.argv[2] ?? 150);
const repositories = Number(process.argv[3] ?? 0);

interface Variant {
  label: string;
  registry: Registry;
  root: string;
  push: number[];
  manifest: number[];
  cpu: number;
}

const clis = process.env.BENCH_BERTH_CLIS
  ? process.env.BENCH_BERTH_CLIS.split(',').map((entry) => {
      const [label, cli] = entry.split('=');
      return { label, cli };
    })
  : [{ label: 'this', cli: buildBerth() }];

/** the two ways berth runs (with the index: its defaults), and more from BENCH_PUSH_CONFIGS (`{"way": {configuration}}`, e.g. the index without audit) */
const configs: Record<string, Record<string, unknown>> = { index: {}, plain: { metadata: { enabled: false } }, ...(process.env.BENCH_PUSH_CONFIGS ? JSON.parse(process.env.BENCH_PUSH_CONFIGS) : {}) };

const variants: Variant[] = [];
try {
  for (const { label, cli } of clis) {
    for (const [way, config] of Object.entries(configs)) {
      const root = await mkdtemp(join(tmpdir(), 'berth-push-index-'));
      if (repositories > 0) await writeFilesystemSet(root, { repositories, tags: repositories * 10, bigTags: 10 }, (line) => console.log(line));
      const registry = await startBerth(filesystemBackend(root), cli, { config, cpuProfileDir: process.env.BENCH_CPU_PROFILE && join(process.env.BENCH_CPU_PROFILE, `${label}-${way}`) });
      variants.push({ label: `${label} ${way}`, registry, root, push: [], manifest: [], cpu: 0 });
    }
  }
  // a filled root: the index's start-up build, then the reconciler's first pass (within its 60 s
  // interval) run before anything is measured; idle means several quiet windows in a row (on a
  // loaded machine a busy process can look quiet for one)
  if (repositories > 0) await new Promise((resolve) => setTimeout(resolve, 75_000));
  for (const v of variants) for (let quiet = 0; quiet < 4; quiet++) if ((await settle(v.registry.pid, 300_000, 0.02)) > 300) quiet = 0;
  // a few pushes each first: the code paths warmed up, not measured
  for (let i = 0; i < 5; i++) for (const v of variants) await pushImage(v.registry.url, `warm/up-${i}`);
  for (const v of variants) await settle(v.registry.pid);
  const load = loadavg();
  for (let i = 0; i < pushes; i++) {
    const order = i % 2 === 0 ? variants : [...variants].reverse();
    for (const v of order) {
      const cpu0 = cpuSeconds(v.registry.pid);
      const { total, manifest } = await pushImage(v.registry.url, `bench-push/image-${i}`);
      v.cpu += cpuSeconds(v.registry.pid) - cpu0;
      v.push.push(total);
      v.manifest.push(manifest);
    }
  }
  console.log(`${pushes} pushes each, ${repositories} repositories before, ${cpus().length} cores, load average ${load.map((l) => l.toFixed(2)).join(' ')} -> ${loadavg().map((l) => l.toFixed(2)).join(' ')}`);
  console.log('| berth | push median ms | manifest PUT median ms | CPU ms per push |');
  console.log('| --- | --- | --- | --- |');
  for (const v of variants) console.log(`| ${v.label} | ${median(v.push).toFixed(2)} | ${median(v.manifest).toFixed(2)} | ${((v.cpu * 1000) / pushes).toFixed(2)} |`);
} finally {
  for (const v of variants) {
    await v.registry.stop().catch(() => undefined);
    await rm(v.root, { recursive: true, force: true });
  }
}
