/**
 * `npm test`: the whole suite on Node's test runner, in two groups (issue 27):
 *
 * - the parallel group: every test file but the serial ones, PARALLEL files at a time (each file
 *   is its own process, on ephemeral ports and temporary directories);
 * - the serial group, afterwards, one file at a time: the files that measure memory or time,
 *   whose bounds hold only on a machine that is not busy with other tests.
 *
 * One Ceph radosgw serves every S3 test of the run: it starts beside the first files, and its
 * status file is named in BERTH_TEST_CEPH (test/helpers/ceph.ts hands out buckets on it). It is
 * stopped by its PIDs however the run ends (failure, SIGINT, SIGTERM).
 *
 *   npm test                              # everything
 *   npm test -- test/http test/gc/x.test.ts   # some folders or files, the same way
 *   TEST_CONCURRENCY=4 npm test           # files at a time in the parallel group
 *
 * A summary of both groups ends the output: the counts of node:test added up, the wall time, and
 * the slowest top-level suites.
 */
import { readdirSync, statSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { run } from 'node:test';
import { spec, tap } from 'node:test/reporters';
import { fileURLToPath } from 'node:url';
import { CEPH_TOOLS, SUITE_CEPH_ENV, startCeph, type CephS3, type SuiteCephStatus } from './helpers/ceph.js';
import { whichTool } from './helpers/tools.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));

/** measured on 2 cores: 3 files at a time keeps both busy without starving the servers' timeouts */
const PARALLEL = Number(process.env.TEST_CONCURRENCY ?? 3);

/**
 * Files that measure memory or time (or load the machine so much that others' bounds would not
 * hold): they run after the parallel group, alone.
 */
const SERIAL = new Set([
  'test/robustness/streaming-memory.test.ts', // peak RSS of a berth process while it streams
  'test/robustness/stalled-downloads.test.ts', // RSS of a berth process under stalled readers
  'test/robustness/slow-clients.test.ts', // sockets let go within the configured bounds
]);

function testFiles(under: string): string[] {
  if (statSync(under).isFile()) return [under];
  return readdirSync(under, { withFileTypes: true }).flatMap((entry) => {
    const path = join(under, entry.name);
    if (entry.isDirectory()) return entry.name === 'node_modules' ? [] : testFiles(path);
    return entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

interface Totals {
  tests: number;
  pass: number;
  fail: number;
  skipped: number;
  todo: number;
  cancelled: number;
}

const totals: Totals = { tests: 0, pass: 0, fail: 0, skipped: 0, todo: 0, cancelled: 0 };
/** the top-level tests and suites: name (where it is defined), milliseconds */
const topLevel: [string, number][] = [];

interface TestEvent {
  type: string;
  data: { name: string; nesting: number; file?: string; skip?: unknown; todo?: unknown; details?: { duration_ms?: number; type?: string; error?: { failureType?: string } } };
}

/** the failures node:test counts as cancelled, not failed */
const CANCELLED = new Set(['cancelledByParent', 'testAborted', 'testTimeoutFailure']);

function count(event: TestEvent): void {
  const { data } = event;
  if (event.type !== 'test:pass' && event.type !== 'test:fail') return;
  if (data.nesting === 0) topLevel.push([`${data.name} (${data.file ? relative(ROOT, data.file) : '?'})`, data.details?.duration_ms ?? 0]);
  if (data.details?.type === 'suite') return; // node:test counts tests, not suites
  totals.tests++;
  if (data.skip !== undefined && data.skip !== false) totals.skipped++;
  else if (data.todo !== undefined && data.todo !== false) totals.todo++;
  else if (event.type === 'test:pass') totals.pass++;
  else if (CANCELLED.has(data.details?.error?.failureType ?? '')) totals.cancelled++;
  else totals.fail++;
}

/** runs `files`, `concurrency` at a time, through the reporter of the terminal; true when none failed */
async function runGroup(files: string[], concurrency: number, signal: AbortSignal): Promise<boolean> {
  if (files.length === 0) return true;
  let ok = true;
  const stream = run({ files, concurrency, signal });
  stream.on('test:fail', (data) => {
    // a failing todo test is expected (node:test reports it as a failure with `todo` set)
    if (data.todo === undefined || data.todo === false) ok = false;
  });
  for (const type of ['test:pass', 'test:fail'] as const) stream.on(type, (data) => count({ type, data } as TestEvent));
  const reporter = process.stdout.isTTY ? new spec() : tap;
  const output = stream.compose(reporter as Parameters<typeof stream.compose>[0]);
  for await (const chunk of output) process.stdout.write(chunk as string);
  return ok;
}

/** the suite's Ceph: started in the background, its endpoint written to `statusFile` when it answers */
function startSuiteCeph(statusFile: string): Promise<CephS3 | undefined> {
  const write = (status: SuiteCephStatus) => writeFile(statusFile, `${JSON.stringify(status)}\n`);
  return startCeph({ own: true }).then(
    async (ceph) => {
      await write({ endpoint: ceph.endpoint, dir: ceph.dir });
      return ceph;
    },
    async (err: unknown) => {
      await write({ error: err instanceof Error ? err.message : String(err) });
      return undefined;
    },
  );
}

async function main(): Promise<number> {
  const started = Date.now();
  const args = process.argv.slice(2);
  const files = (args.length > 0 ? args : ['test'])
    .flatMap((arg) => testFiles(resolve(ROOT, arg)))
    .map((file) => relative(ROOT, file))
    .sort();
  const parallel = files.filter((file) => !SERIAL.has(file));
  const serial = files.filter((file) => SERIAL.has(file));

  const abort = new AbortController();
  const work = await mkdtemp(join(tmpdir(), 'berth-test-run-'));
  // without the Ceph tools the S3 tests skip (or fail in CI) by themselves, as when run alone
  const cephTools = CEPH_TOOLS.every((tool) => whichTool(tool) !== undefined);
  let ceph: Promise<CephS3 | undefined> = Promise.resolve(undefined);
  if (cephTools) {
    const statusFile = join(work, 'ceph.json');
    process.env[SUITE_CEPH_ENV] = statusFile;
    ceph = startSuiteCeph(statusFile);
  }
  let interrupted = 0;
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.on(signal, () => {
      if (interrupted++ > 0) process.exit(130); // a second ^C: now (the exit hook of ceph.ts stops Ceph)
      process.stderr.write(`\n${signal}: stopping the test files and the suite's Ceph\n`);
      abort.abort();
    });
  }

  let ok = false;
  try {
    process.chdir(ROOT);
    ok = await runGroup(parallel, PARALLEL, abort.signal);
    if (!abort.signal.aborted) ok = (await runGroup(serial, 1, abort.signal)) && ok;
  } finally {
    await (await ceph)?.stop();
    await rm(work, { recursive: true, force: true });
  }

  const seconds = (Date.now() - started) / 1000;
  const slowest = topLevel
    .sort((a, b) => b[1] - a[1])
    .slice(0, 15)
    .map(([name, ms]) => `#   ${(ms / 1000).toFixed(1).padStart(6)} s  ${name}`);
  const line = Object.entries(totals)
    .map(([key, value]) => `${key} ${value}`)
    .join(', ');
  process.stdout.write(
    `\n# the whole suite: ${files.length} files (${parallel.length} ${PARALLEL} at a time, then ${serial.length} alone)\n` +
      `# ${line}\n# wall time ${Math.floor(seconds / 60)} min ${Math.round(seconds % 60)} s\n# slowest top-level suites:\n${slowest.join('\n')}\n`,
  );
  if (abort.signal.aborted) return 130;
  return ok && totals.fail === 0 ? 0 : 1;
}

process.exitCode = await main();
