/**
 * A throw-away single-node Ceph radosgw (S3 on 127.0.0.1), started by test/helpers/ceph-s3.sh
 * (1 mon, 1 memstore OSD: objects live in RAM). Under `npm test` (test/run.ts) one Ceph serves the
 * whole suite: the runner names its status file in BERTH_TEST_CEPH, and startCeph() hands out a
 * handle on it (every file makes its own buckets; stop() leaves the shared store running). A file
 * run alone starts its own, as does a file that asks for `own` (it freezes radosgw, or needs a
 * small memstore):
 *
 *   describe('s3 ...', needTools(CEPH_TOOLS, 'the S3 driver tests'), () => {
 *     let ceph: CephS3;
 *     before(async () => { ceph = await startCeph(); });
 *     after(() => ceph?.stop());
 *     ...
 *   });
 *
 * The daemons run in their own sessions (setsid), so they are not our children: stop() and an
 * exit hook stop them by the PIDs the script recorded (`ceph-s3.sh stop DIR purge`).
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { CreateBucketCommand, S3Client } from '@aws-sdk/client-s3';
import type { Overrides } from './berth.js';
import { freePort } from './ports.js';
import { spawnLogged } from './processes.js';
import { assertTool } from './tools.js';

export const CEPH_SCRIPT = fileURLToPath(new URL('./ceph-s3.sh', import.meta.url));
export const CEPH_TOOLS = ['ceph-mon', 'ceph-osd', 'radosgw', 'radosgw-admin', 'ceph', 'monmaptool', 'uuidgen', 'curl', 'python3'] as const;
export const CEPH_ACCESS_KEY = 'BERTHTESTKEY';
export const CEPH_SECRET_KEY = 'BERTHTESTSECRET';

export interface CephS3 {
  endpoint: string;
  dir: string;
  /** a new bucket with a unique name */
  createBucket(prefix?: string): Promise<string>;
  /** storage.s3 parameters for berth (or Distribution) on `bucket` */
  params(bucket: string, extra?: Overrides): Overrides;
  stop(): Promise<void>;
}

const running = new Set<string>();
let hooked = false;

function stopSync(dir: string): void {
  spawnSync('bash', [CEPH_SCRIPT, 'stop', dir, 'purge'], { stdio: 'ignore', timeout: 30_000 });
}

function hookExit(): void {
  if (hooked) return;
  hooked = true;
  process.on('exit', () => {
    for (const dir of running) stopSync(dir);
  });
}

/** the environment variable naming the status file of the suite's Ceph (test/run.ts) */
export const SUITE_CEPH_ENV = 'BERTH_TEST_CEPH';

/** what test/run.ts writes into the status file once its Ceph answers (or failed to start) */
export type SuiteCephStatus = { endpoint: string; dir: string } | { error: string };

/** the suite's Ceph, once test/run.ts has it running (it starts while the first files run) */
async function suiteCeph(statusFile: string, timeoutMs: number): Promise<{ endpoint: string; dir: string }> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const text = await readFile(statusFile, 'utf8').catch(() => '');
    if (text.endsWith('\n')) {
      const status = JSON.parse(text) as SuiteCephStatus;
      if ('error' in status) throw new Error(`the suite's Ceph did not start (test/run.ts):\n${status.error}`);
      return status;
    }
    if (Date.now() > deadline) throw new Error(`the suite's Ceph did not start within ${timeoutMs} ms (status file ${statusFile})`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

function cephHandle(endpoint: string, dir: string, stopStore: () => Promise<void>): CephS3 {
  const admin = new S3Client({
    region: 'us-east-1',
    endpoint,
    forcePathStyle: true,
    credentials: { accessKeyId: CEPH_ACCESS_KEY, secretAccessKey: CEPH_SECRET_KEY },
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  let stopped = false;
  return {
    endpoint,
    dir,
    async createBucket(prefix = 'berth') {
      const bucket = `${prefix}-${randomBytes(6).toString('hex')}`;
      await admin.send(new CreateBucketCommand({ Bucket: bucket }));
      return bucket;
    },
    params(bucket, extra = {}) {
      return {
        region: 'us-east-1',
        regionendpoint: endpoint,
        forcepathstyle: true,
        secure: false,
        accesskey: CEPH_ACCESS_KEY,
        secretkey: CEPH_SECRET_KEY,
        bucket,
        ...extra,
      };
    },
    async stop() {
      if (stopped) return;
      stopped = true;
      admin.destroy();
      await stopStore();
    },
  };
}

/**
 * `own`: a Ceph of this process even under the suite's runner (for a test that freezes radosgw
 * or fills the store); `memstoreBytes` implies it.
 */
export async function startCeph(options: { timeoutMs?: number; memstoreBytes?: number; own?: boolean } = {}): Promise<CephS3> {
  for (const tool of CEPH_TOOLS) assertTool(tool, 'the Ceph S3 store of the S3 tests');
  const suite = process.env[SUITE_CEPH_ENV];
  if (suite && !options.own && options.memstoreBytes === undefined) {
    const { endpoint, dir } = await suiteCeph(suite, options.timeoutMs ?? 180_000);
    return cephHandle(endpoint, dir, async () => {}); // the runner stops it when the suite ends
  }
  hookExit();
  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    const base = await mkdtemp(join(tmpdir(), 'berth-ceph-'));
    const dir = join(base, 'c');
    const port = await freePort();
    running.add(dir);
    const proc = await spawnLogged('bash', [CEPH_SCRIPT, 'start', dir, String(port)], {
      label: `ceph:${port}`,
      env: { ...process.env, START_TIMEOUT: '60', ...(options.memstoreBytes ? { MEMSTORE_BYTES: String(options.memstoreBytes) } : {}) },
    });
    const timeoutMs = options.timeoutMs ?? 120_000;
    let timer: NodeJS.Timeout | undefined;
    const result = await Promise.race([
      proc.exited,
      new Promise<'timeout'>((resolve) => {
        timer = setTimeout(() => resolve('timeout'), timeoutMs);
      }),
    ]);
    clearTimeout(timer);
    if (result !== 'timeout' && result.code === 0) {
      return cephHandle(`http://127.0.0.1:${port}`, dir, async () => {
        await spawnLogged('bash', [CEPH_SCRIPT, 'stop', dir, 'purge'], { label: 'ceph-stop' }).then((p) => p.exited);
        running.delete(dir);
        await rm(base, { recursive: true, force: true });
      });
    }
    if (result === 'timeout') proc.child.kill('SIGKILL');
    stopSync(dir);
    running.delete(dir);
    await rm(base, { recursive: true, force: true });
    lastError = new Error(`ceph-s3.sh start failed (${result === 'timeout' ? 'timeout' : `exit ${result.code}`}):\n${proc.logs().slice(-4000)}`);
    if (!/already in use/.test(proc.logs())) break;
  }
  throw lastError;
}

let shared: Promise<{ ceph: CephS3; bucket: string }> | undefined;
let ownShared = false;

/**
 * For a test file that freezes radosgw (SIGSTOP): the store of sharedCeph() in this process is
 * its own, never the suite's (which other files use at the same time). Call at the file's top.
 */
export function useOwnCeph(): void {
  ownShared = true;
}

/**
 * One bucket shared by every s3 registry of this test process, on the suite's Ceph (test/run.ts)
 * or on one started on first use (about 5-10 s). Test files that use it call stopSharedCeph() in
 * a top-level after(); the exit hook stops it anyway.
 */
export function sharedCeph(): Promise<{ ceph: CephS3; bucket: string }> {
  shared ??= (async () => {
    const ceph = await startCeph({ own: ownShared });
    return { ceph, bucket: await ceph.createBucket('shared') };
  })();
  return shared;
}

export async function stopSharedCeph(): Promise<void> {
  if (shared === undefined) return;
  const current = shared;
  shared = undefined;
  const { ceph } = await current.catch(() => ({ ceph: undefined }));
  await ceph?.stop();
}
