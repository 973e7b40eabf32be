/**
 * The results: a Markdown page (machine, limits, a summary, one table per scenario, the commands)
 * and a chart of the ratios berth / Distribution, as SVG and, through rsvg-convert, PNG. The rows on
 * filesystem storage and those on S3 storage are separate sections of the page and of the chart.
 */
import { execFile } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import type { GcRow, GcScaleRun } from './gc.js';
import { renderScaling, type ScalingRow } from './scaling.js';
import { renderIndexScale, type IndexScaleRun } from './index-scale.js';
import { renderOnlineGc, type OnlineGcRun } from './gc-online-scale.js';
import type { Limits } from './limits.js';
import type { Usage } from './process-stats.js';
import type { RegistryName } from './registries.js';
import type { Outcome, Scenario, Storage } from './scenarios.js';
import { median, MiB } from './stats.js';

const run = promisify(execFile);

export interface Sample {
  outcome: Outcome;
  usage: Usage;
}

export interface ScenarioResult {
  scenario: Scenario;
  samples: Record<RegistryName, Sample[]>;
  error?: string;
}

export interface Summary {
  throughput: number;
  seconds: number;
  p50?: number;
  p99?: number;
  peakRss: number;
  /** the most a round's peak rose above the RSS the process idled at when that round started */
  aboveIdle: number;
  cpu: number;
  rounds: number;
}

export function summarize(samples: Sample[]): Summary | undefined {
  if (samples.length === 0) return undefined;
  const opt = (values: (number | undefined)[]) => (values.every((v) => v !== undefined) ? median(values as number[]) : undefined);
  return {
    throughput: median(samples.map((s) => s.outcome.throughput)),
    seconds: median(samples.map((s) => s.outcome.seconds)),
    p50: opt(samples.map((s) => s.outcome.p50)),
    p99: opt(samples.map((s) => s.outcome.p99)),
    peakRss: median(samples.map((s) => s.usage.peakRss)),
    // the largest, not the median: after its first round a process's RSS stays near the peak, so
    // later rounds rise little above it (results saved before the start was recorded have none)
    aboveIdle: Math.max(...samples.map((s) => s.usage.peakRss - (s.usage.startRss ?? s.usage.peakRss))),
    cpu: median(samples.map((s) => s.usage.cpu)),
    rounds: samples.length,
  };
}

export interface Machine {
  cpu: string;
  cores: number;
  memory: number;
  kernel: string;
  node: string;
  distribution: string;
  berthCommit: string;
  /** how berth was started */
  berthRun: string;
  loadStart: number[];
  loadEnd: number[];
  /** whoever ran it said nothing else ran on the machine (BENCH_QUIET=1) */
  quiet: boolean;
  started: Date;
  finished: Date;
}

/** the S3 part of a run */
export interface S3Part {
  /** what the store is (Ceph version, memstore) */
  store: string;
  /** why the S3 rows were not measured (a Ceph tool missing), shown loudly on the page */
  skipped?: string;
}

export interface Report {
  machine: Machine;
  /** undefined when the run selected no S3 row (BENCH_ONLY) */
  s3?: S3Part;
  limits: Limits;
  results: ScenarioResult[];
  /** the offline garbage collection row, when it ran */
  gc?: GcRow;
  /** berth's offline collection at 1,000 and 10,000 repositories, when it ran */
  gcScale?: GcScaleRun[];
  /** the several-instances row (s3-ha-8x), when it ran */
  scaling?: ScalingRow;
  /** the metadata index rows at scale (index-fs, index-s3), when they ran */
  indexScale?: IndexScaleRun[];
  /** the online collection rows on S3 (online-gc-s3), when they ran */
  onlineGc?: OnlineGcRun[];
  settings: Record<string, string>;
  quick: boolean;
  command: string;
  chartFile: string;
  notes: string[];
}

const f = (v: number | undefined, digits = 1) => (v === undefined || Number.isNaN(v) ? '–' : v.toFixed(digits));
const ratio = (b: number | undefined, r: number | undefined) => (b === undefined || r === undefined || r === 0 ? undefined : b / r);
const mib = (bytes: number | undefined) => (bytes === undefined ? undefined : bytes / MiB);
const load = (l: number[]) => l.map((v) => v.toFixed(2)).join(' / ');
const fmtThroughput = (v: number | undefined, unit: string) => (v === undefined ? '–' : unit === 'req/s' ? v.toFixed(0) : v.toFixed(1));

function both(result: ScenarioResult): { b?: Summary; r?: Summary } {
  return { b: summarize(result.samples.berth), r: summarize(result.samples.distribution) };
}

/** offline collection of the same root: time and peak RSS of each process, medians over the rounds */
function renderGc(lines: string[], gc: GcRow): void {
  const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)];
  const seconds = { b: median(gc.berth.map((r) => r.seconds)), r: median(gc.distribution.map((r) => r.seconds)) };
  const rss = { b: median(gc.berth.map((r) => r.peakRssKiB)) / 1024, r: median(gc.distribution.map((r) => r.peakRssKiB)) / 1024 };
  lines.push('');
  lines.push('## Offline garbage collection');
  lines.push('');
  lines.push(
    `A filesystem root of ${gc.repositories} repositories, ${gc.images} images (${gc.deleted} deleted through the API), ${gc.blobs} blobs; ` +
      `\`berth garbage-collect\` and \`docker-registry garbage-collect\` each on a fresh copy, ${gc.berth.length} round(s), whole process under GNU time.`,
  );
  lines.push('');
  lines.push('| | berth | Distribution | speed ratio (Distribution s / berth s) |');
  lines.push('|---|---|---|---|');
  lines.push(`| seconds (median) | ${f(seconds.b, 2)} | ${f(seconds.r, 2)} | **${f(ratio(seconds.r, seconds.b), 2)}×** |`);
  lines.push(`| peak RSS MiB (median) | ${f(rss.b, 0)} | ${f(rss.r, 0)} | |`);
  lines.push(`| blobs left | ${gc.berth.map((r) => r.blobsLeft).join(', ')} | ${gc.distribution.map((r) => r.blobsLeft).join(', ')} | |`);
}

/** berth's offline collection as the root grows: time and peak RSS, and whether exactly the deleted images' blobs went */
function renderGcScale(lines: string[], runs: GcScaleRun[]): void {
  lines.push('');
  lines.push('## Garbage collection at scale');
  lines.push('');
  lines.push('`berth garbage-collect` once per root (test/helpers/gc-fixture.ts: 3 images per repository, one deleted); memory should follow the digests kept, not the bytes.');
  lines.push('');
  lines.push('| repositories | blobs | seconds | peak RSS MiB | blobs left (expected) |');
  lines.push('|---|---|---|---|---|');
  for (const r of runs) lines.push(`| ${r.repositories} | ${r.blobs} | ${f(r.seconds, 1)} | ${f(r.peakRssKiB / 1024, 0)} | ${r.blobsLeft} (${r.blobsExpected})${r.blobsLeft === r.blobsExpected ? '' : ' **WRONG**'} |`);
}

export function renderMarkdown(report: Report): string {
  const { machine, limits, results } = report;
  const date = machine.started.toISOString().slice(0, 10);
  const lines: string[] = [];
  lines.push(`# berth vs CNCF Distribution: benchmarks of ${date}${report.quick ? ' (BENCH_QUICK smoke run: small blobs, short runs, not representative)' : ''}`);
  lines.push('');
  const storages = sections(report).map(([storage]) => storage);
  const where = [
    storages.includes('filesystem') ? 'on filesystem storage (each its own root on the same disk)' : '',
    storages.includes('s3') ? `${storages.length > 1 ? 'then ' : ''}on S3 storage (one bucket of a local Ceph radosgw, each its own key prefix)` : '',
  ].filter(Boolean);
  lines.push(`Both registries ran side by side on 127.0.0.1 as child processes, ${where.join(', and ')}; every scenario ran both in alternating order (round 1 berth first, round 2 Distribution first, ...). Figures are medians over the rounds. Ratio = berth / Distribution: above 1 berth is faster; for peak RSS and CPU below 1 berth uses less.`);
  lines.push('');
  lines.push('Peak RSS (above idle): the peak, and in brackets the most any round rose above the RSS the process idled at when that round began (each registry settles before every round; the rows before leave their RSS behind, so the bracket is what the row itself added).');
  lines.push('');
  if (report.s3?.skipped) {
    lines.push(`> **S3 rows skipped: ${report.s3.skipped}.** This page has the filesystem rows only.`);
    lines.push('');
  }
  lines.push('![ratios berth / Distribution](' + report.chartFile + ')');
  lines.push('');
  lines.push('## Machine');
  lines.push('');
  lines.push('| | |');
  lines.push('|---|---|');
  lines.push(`| CPU | ${machine.cpu}, ${machine.cores} cores |`);
  lines.push(`| memory | ${(machine.memory / 1024 ** 3).toFixed(1)} GiB |`);
  lines.push(`| kernel | ${machine.kernel} |`);
  lines.push(`| Node.js | ${machine.node} (berth: one process, one event loop; ${machine.berthRun}) |`);
  lines.push(`| reference | ${machine.distribution} (Go, uses every core) |`);
  lines.push(`| berth | commit ${machine.berthCommit} |`);
  if (report.s3) lines.push(`| S3 store | ${report.s3.skipped ? `skipped: ${report.s3.skipped}` : report.s3.store} |`);
  lines.push(`| load average (1/5/15 min) at start | ${load(machine.loadStart)} |`);
  lines.push(`| load average (1/5/15 min) at end | ${load(machine.loadEnd)} |`);
  lines.push(`| duration | ${((machine.finished.getTime() - machine.started.getTime()) / 60000).toFixed(1)} min (${machine.started.toISOString()} to ${machine.finished.toISOString()}) |`);
  lines.push('');
  lines.push(
    (machine.quiet
      ? 'Quiet run: whoever ran it says nothing else ran on the machine (BENCH_QUIET=1), so the load average is the bench\'s own. '
      : 'The machine may have been shared: other work (test suites of other branches) may have run at the same time, which the load average shows. ') +
      'Both registries and the bench client (autocannon, the blob client, skopeo) share the same cores, so the client takes CPU from the server, the same for both.',
  );
  lines.push('');
  lines.push('## Physical limits of this machine');
  lines.push('');
  lines.push('| limit | MiB/s |');
  lines.push('|---|---:|');
  lines.push(`| sha256, one core (node crypto) | ${f(limits.sha256, 0)} |`);
  lines.push(`| disk write, ${(limits.bytes / MiB).toFixed(0)} MiB file then fsync | ${f(limits.diskWrite, 0)} |`);
  lines.push(`| disk read, same file (page cache: dropping it needs root) | ${f(limits.diskReadCached, 0)} |`);
  lines.push(`| disk read, same file with O_DIRECT (\`dd iflag=direct\`) | ${limits.diskReadDirect === undefined ? 'not possible here' : f(limits.diskReadDirect, 0)} |`);
  lines.push(`| loopback TCP, one connection (node net) | ${f(limits.loopback, 0)} |`);
  const floor = Math.min(limits.sha256, limits.diskWrite);
  lines.push('');
  lines.push(`Blob push target: 80% of min(sha256, disk write) = ${f(0.8 * floor, 0)} MiB/s. Pulls read from the page cache here (the blobs were just written and memory is large), so they measure the registries, not the disk.`);
  lines.push('');
  lines.push('## Summary');
  for (const [storage, rows] of sections(report)) {
    lines.push('');
    lines.push(`### ${SECTION_TITLES[storage]}`);
    lines.push('');
    if (storage === 's3') lines.push(s3Intro(report), '');
    if (rows.length === 0) continue;
    lines.push('| scenario | unit | berth | Distribution | ratio | peak RSS MiB (above idle) berth / Distribution | CPU s berth / Distribution |');
    lines.push('|---|---|---:|---:|---:|---:|---:|');
    for (const result of rows) {
      const { b, r } = both(result);
      const s = result.scenario;
      if (result.error) {
        lines.push(`| ${s.id} | ${s.unit} | failed | | | | |`);
        continue;
      }
      lines.push(
        `| ${s.id} | ${s.unit} | ${fmtThroughput(b?.throughput, s.unit)} | ${fmtThroughput(r?.throughput, s.unit)} | **${f(ratio(b?.throughput, r?.throughput), 2)}×** | ${f(mib(b?.peakRss), 0)} (+${f(mib(b?.aboveIdle), 0)}) / ${f(mib(r?.peakRss), 0)} (+${f(mib(r?.aboveIdle), 0)}) | ${f(b?.cpu, 2)} / ${f(r?.cpu, 2)} |`,
      );
    }
  }
  if (lines[lines.length - 1] !== '') lines.push('');
  lines.push('## Targets');
  lines.push('');
  lines.push(...targets(report).map((t) => `- ${t}`));
  if (report.gc) renderGc(lines, report.gc);
  if (report.gcScale) renderGcScale(lines, report.gcScale);
  if (report.scaling) renderScaling(lines, report.scaling);
  if (report.indexScale) renderIndexScale(lines, report.indexScale);
  if (report.onlineGc) renderOnlineGc(lines, report.onlineGc);
  for (const [storage, rows] of sections(report)) {
    if (rows.length === 0) continue;
    lines.push('');
    lines.push(`## Scenarios on ${storage === 's3' ? 'S3' : 'filesystem'} storage`);
    for (const result of rows) renderScenario(lines, result);
  }
  lines.push('');
  if (report.notes.length > 0) {
    lines.push('## Notes');
    lines.push('');
    lines.push(...report.notes.map((n) => `- ${n}`));
    lines.push('');
  }
  lines.push('## Settings and commands');
  lines.push('');
  lines.push('| setting | value |');
  lines.push('|---|---|');
  for (const [k, v] of Object.entries(report.settings)) lines.push(`| ${k} | ${v} |`);
  lines.push('');
  lines.push('```sh');
  lines.push(report.command);
  lines.push('```');
  lines.push('');
  return lines.join('\n');
}

const SECTION_TITLES: Record<Storage, string> = { filesystem: 'Filesystem storage', s3: 'S3 storage (Ceph radosgw)' };

/** the results by storage, in run order; the S3 section also when its rows were skipped */
function sections(report: Report): [Storage, ScenarioResult[]][] {
  const out: [Storage, ScenarioResult[]][] = [];
  const fs = report.results.filter((r) => r.scenario.storage !== 's3');
  const s3 = report.results.filter((r) => r.scenario.storage === 's3');
  if (fs.length > 0) out.push(['filesystem', fs]);
  if (s3.length > 0 || report.s3) out.push(['s3', s3]);
  return out;
}

function s3Intro(report: Report): string {
  if (report.s3?.skipped) return `**Skipped: ${report.s3.skipped}.** The S3 rows need the Ceph packages of the S3 tests (\`apt-get install -y --no-install-recommends ceph-mon ceph-osd radosgw ceph-common\`); the bench installs nothing.`;
  return [
    `Both registries on one bucket of ${report.s3?.store ?? 'a local Ceph radosgw'}, each under its own key prefix (storage.s3.rootdirectory), parts of 10 MiB; the store runs on the same cores as the registries and the client, and sets the pace of most rows.`,
    `Blob rows stream through the registry (storage.redirect.disable: true) except s3-pull-redirect, which runs against a second instance of each registry with redirects on.`,
    `Blobs are smaller than the filesystem rows' to keep the run in its time budget (see the titles).`,
    `Peak RSS is VmHWM reset to the current RSS before each run: memory a process has not given back yet after the row before (Distribution's Go heap after s3-push-8x) counts in the next row.`,
  ].join(' ');
}

function renderScenario(lines: string[], result: ScenarioResult): void {
  const s = result.scenario;
  lines.push('');
  lines.push(`### ${s.id}: ${s.title}`);
  lines.push('');
  if (s.note) lines.push(`${s.note}.`, '');
  if (result.error) {
    lines.push('Failed: `' + result.error.replace(/`/g, "'").slice(0, 800) + '`');
    return;
  }
  const { b, r } = both(result);
  lines.push(`| | ${s.unit} | time s | p50 ms | p99 ms | peak RSS MiB | CPU s | rounds |`);
  lines.push('|---|---:|---:|---:|---:|---:|---:|---:|');
  const row = (name: string, x?: Summary) =>
    lines.push(`| ${name} | ${fmtThroughput(x?.throughput, s.unit)} | ${f(x?.seconds, 2)} | ${f(x?.p50, 1)} | ${f(x?.p99, 1)} | ${f(mib(x?.peakRss), 0)} | ${f(x?.cpu, 2)} | ${x?.rounds ?? 0} |`);
  row('berth', b);
  row('Distribution', r);
  lines.push(
    `| berth / Distribution | **${f(ratio(b?.throughput, r?.throughput), 2)}** | ${f(ratio(b?.seconds, r?.seconds), 2)} | ${f(ratio(b?.p50, r?.p50), 2)} | ${f(ratio(b?.p99, r?.p99), 2)} | ${f(ratio(b?.peakRss, r?.peakRss), 2)} | ${f(ratio(b?.cpu, r?.cpu), 2)} | |`,
  );
}

function targets(report: Report): string[] {
  const out: string[] = [];
  const behind: string[] = [];
  const rssOver: string[] = [];
  const floor = 0.8 * Math.min(report.limits.sha256, report.limits.diskWrite);
  const slowPush: string[] = [];
  for (const result of report.results) {
    if (result.error) continue;
    const { b, r } = both(result);
    const x = ratio(b?.throughput, r?.throughput);
    if (x !== undefined && x < 1) behind.push(`${result.scenario.id} (${x.toFixed(2)}×)`);
    if (result.scenario.group === 'blob') {
      const m = ratio(b?.peakRss, r?.peakRss);
      if (m !== undefined && m > 1) rssOver.push(`${result.scenario.id} (${f(mib(b?.peakRss), 0)} vs ${f(mib(r?.peakRss), 0)} MiB)`);
      // the sha256 / disk floor is a filesystem limit; on S3 the store sets the pace
      if (result.scenario.storage !== 's3' && result.scenario.id.startsWith('push') && b && b.throughput < floor) slowPush.push(`${result.scenario.id} (${b.throughput.toFixed(0)} MiB/s)`);
    }
  }
  out.push(behind.length === 0 ? 'berth ≥ 1.0× Distribution on every throughput row: **met**.' : `berth ≥ 1.0× Distribution on every throughput row: **not met** on ${behind.join(', ')}.`);
  out.push(rssOver.length === 0 ? 'berth peak RSS ≤ Distribution on blob transfers: **met**.' : `berth peak RSS ≤ Distribution on blob transfers: **not met** on ${rssOver.join(', ')}.`);
  out.push(
    slowPush.length === 0
      ? `berth blob push on the filesystem ≥ 80% of min(sha256, disk write) = ${floor.toFixed(0)} MiB/s: **met**.`
      : `berth blob push on the filesystem ≥ 80% of min(sha256, disk write) = ${floor.toFixed(0)} MiB/s: **not met** on ${slowPush.join(', ')}.`,
  );
  if (report.s3?.skipped) out.push(`S3 rows: **not measured**: ${report.s3.skipped}.`);
  return out;
}

// ------------------------------------------------------------------------------------------------
// chart

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

/**
 * two panels of horizontal bars on a log scale around 1: throughput ratio, peak RSS ratio; with S3
 * rows (or S3 skipped), a heading line before each storage's rows
 */
export function renderSvg(report: Report): string {
  type Line = { heading: string } | { result: ScenarioResult };
  const parts = sections(report);
  const lines: Line[] = [];
  for (const [storage, results] of parts) {
    if (parts.length > 1 || storage === 's3') {
      const skipped = storage === 's3' && report.s3?.skipped ? ` — skipped: ${report.s3.skipped}` : '';
      lines.push({ heading: `${SECTION_TITLES[storage]}${skipped}` });
    }
    for (const result of results) if (!result.error) lines.push({ result });
  }
  const rows = lines;
  const rowH = 22;
  const top = 70;
  const labelW = 230;
  const panelW = 380;
  const gap = 40;
  const width = labelW + 2 * panelW + gap + 30;
  const height = top + rows.length * rowH + 50;
  const [lo, hi] = [-3, 5]; // log2: 1/8× .. 32×
  const x = (panel: number, r: number) => {
    const l = Math.max(lo, Math.min(hi, Math.log2(r)));
    return labelW + panel * (panelW + gap) + ((l - lo) / (hi - lo)) * panelW;
  };
  const out: string[] = [];
  out.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" font-family="DejaVu Sans, Arial, sans-serif" font-size="12">`);
  out.push(`<rect width="100%" height="100%" fill="white"/>`);
  out.push(`<text x="10" y="22" font-size="15" font-weight="bold">${esc(`berth / CNCF Distribution, ${report.machine.started.toISOString().slice(0, 10)}${report.quick ? ' (quick smoke run)' : ''}`)}</text>`);
  rows.forEach((line, i) => {
    if ('heading' in line) out.push(`<rect x="0" y="${top + i * rowH}" width="${width}" height="${rowH}" fill="#dde6f0"/>`);
    else if (i % 2 === 0) out.push(`<rect x="0" y="${top + i * rowH}" width="${width}" height="${rowH}" fill="#f2f2f2"/>`);
  });
  const titles = ['throughput ratio (higher is better)', 'peak RSS ratio (lower is better)'];
  for (const panel of [0, 1]) {
    const x0 = labelW + panel * (panelW + gap);
    out.push(`<text x="${x0 + panelW / 2}" y="48" text-anchor="middle" font-weight="bold">${titles[panel]}</text>`);
    for (const tick of [0.125, 0.25, 0.5, 1, 2, 4, 8, 16, 32]) {
      const tx = x(panel, tick);
      out.push(`<line x1="${tx}" y1="${top - 8}" x2="${tx}" y2="${top + rows.length * rowH}" stroke="${tick === 1 ? '#333' : '#ddd'}" stroke-width="${tick === 1 ? 1.5 : 1}"/>`);
      out.push(`<text x="${tx}" y="${top + rows.length * rowH + 16}" text-anchor="middle" fill="#555">${tick < 1 ? `1/${1 / tick}` : tick}×</text>`);
    }
  }
  rows.forEach((line, i) => {
    const y = top + i * rowH;
    if ('heading' in line) {
      out.push(`<text x="10" y="${y + 15}" font-weight="bold">${esc(line.heading)}</text>`);
      return;
    }
    const { result } = line;
    const { b, r } = both(result);
    out.push(`<text x="${labelW - 8}" y="${y + 15}" text-anchor="end">${esc(result.scenario.id)}</text>`);
    const bars: [number, number | undefined, boolean][] = [
      [0, ratio(b?.throughput, r?.throughput), true],
      [1, ratio(b?.peakRss, r?.peakRss), false],
    ];
    for (const [panel, value, higherIsBetter] of bars) {
      if (value === undefined || !Number.isFinite(value)) continue;
      const good = higherIsBetter ? value >= 1 : value <= 1;
      const x1 = x(panel, 1);
      const x2 = x(panel, value);
      out.push(`<rect x="${Math.min(x1, x2)}" y="${y + 4}" width="${Math.max(1, Math.abs(x2 - x1))}" height="${rowH - 8}" fill="${good ? '#3a9d5d' : '#d0533f'}"/>`);
      const anchor = x2 >= x1 ? 'start' : 'end';
      out.push(`<text x="${x2 + (x2 >= x1 ? 4 : -4)}" y="${y + 15}" text-anchor="${anchor}" font-size="11">${value.toFixed(2)}×</text>`);
    }
  });
  out.push(`<text x="10" y="${height - 10}" fill="#555" font-size="11">${esc(`medians over rounds; machine: ${report.machine.cores} cores, load ${load(report.machine.loadStart)} at start, ${load(report.machine.loadEnd)} at end`)}</text>`);
  out.push('</svg>');
  return out.join('\n');
}

/** writes the SVG and converts it to PNG with rsvg-convert; false (SVG only) when that is missing */
export async function writeChart(svgFile: string, pngFile: string, svg: string): Promise<boolean> {
  await writeFile(svgFile, svg);
  try {
    await run('rsvg-convert', ['-f', 'png', '-o', pngFile, svgFile], { timeout: 60_000 });
    return true;
  } catch {
    return false;
  }
}

// ------------------------------------------------------------------------------------------------
// raw results: written next to the page, read back by bench/render.ts

export interface SavedScenario {
  id: string;
  group: Scenario['group'];
  /** absent in files written before the S3 rows: filesystem */
  storage?: Storage;
  instance?: Scenario['instance'];
  title: string;
  unit: Scenario['unit'];
  note?: string;
  rounds: number;
  samples: ScenarioResult['samples'];
  error?: string;
}

export type SavedReport = Omit<Report, 'results'> & { results: SavedScenario[] };

export function toJSON(report: Report): SavedReport {
  return {
    ...report,
    results: report.results.map((r) => ({
      id: r.scenario.id,
      group: r.scenario.group,
      storage: r.scenario.storage,
      instance: r.scenario.instance,
      title: r.scenario.title,
      unit: r.scenario.unit,
      note: r.scenario.note,
      rounds: r.scenario.rounds,
      samples: r.samples,
      error: r.error,
    })),
  };
}

export function fromJSON(saved: SavedReport): Report {
  const date = (d: unknown) => new Date(d as string);
  return {
    ...saved,
    machine: { ...saved.machine, started: date(saved.machine.started), finished: date(saved.machine.finished) },
    results: saved.results.map((r) => ({
      scenario: {
        id: r.id,
        group: r.group,
        storage: r.storage ?? 'filesystem',
        instance: r.instance,
        title: r.title,
        unit: r.unit,
        note: r.note,
        rounds: r.rounds,
        run: () => Promise.reject(new Error('saved result')),
      },
      samples: r.samples,
      error: r.error,
    })),
  };
}
