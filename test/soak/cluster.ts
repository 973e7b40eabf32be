/**
 * The soak's registry: three berth instances (`http.workers: 2` each) on one Ceph bucket, sharing
 * Redis (the metadata cache) and one PostgreSQL database (the metadata index), behind HAProxy;
 * online GC, retention (on `ret/**` only) and the upload purge on short delays. Instances keep their port across a kill, so HAProxy's backend
 * list never changes. Every process is stopped by PID in stop(), also after a failure.
 */
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { MiB, startBerthProcess, type BerthProcess } from '../helpers/berth-process.js';
import type { Overrides } from '../helpers/berth.js';
import { startCeph, type CephS3 } from '../helpers/ceph.js';
import { startHaproxy, type Balancer } from '../helpers/haproxy.js';
import { freePort } from '../helpers/ports.js';
import { startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';

/** what the retention policy of the soak may remove, and so what the checker must not count as lost */
export const RETENTION = {
  /** repositories under the policy */
  glob: 'ret/**',
  prefix: 'ret/',
  /** tags whose whole name matches stay */
  keepTag: /^keep-.*$/,
  tagsOlderThanMs: 30_000,
  untaggedOlderThanMs: 20_000,
} as const;

export const GC = { intervalMs: 10_000, delayMs: 20_000 } as const;

export const ROOT_DIRECTORY = '/soak';

/** one berth instance: its slot keeps the port; `process` is the running one, undefined while down */
export interface Slot {
  index: number;
  port: number;
  process?: BerthProcess;
  /** the dead processes, stopped (config dir removed) at the end */
  dead: BerthProcess[];
}

export interface SoakCluster {
  url: string;
  slots: Slot[];
  ceph: CephS3;
  bucket: string;
  /** storage.s3 parameters of the instances */
  s3: Overrides;
  /** the configuration of the instances but for the listener, for `berth uploads purge` and `berth verify` */
  commandConfig: string;
  /** the radosgw daemon's PID (for SIGSTOP / SIGCONT) */
  rgwPid(): number;
  /** the PIDs of an instance: its primary and its workers */
  pids(slot: Slot): number[];
  /** starts the slot's instance again on its port */
  start(slot: Slot): Promise<void>;
  /** stops HAProxy and every instance (Ceph, Redis and PostgreSQL stay for the commands) */
  stopInstances(): Promise<void>;
  stop(): Promise<void>;
}

/**
 * connections per process to PostgreSQL: 3 instances of a primary and 2 workers, and the commands,
 * stay under the test cluster's max_connections (50)
 */
const POOL_SIZE = 4;

/** the reconciler's interval: short, so the final check sees what it repaired */
export const RECONCILE_MS = 5000;

function instanceConfig(redis: string, postgres: string): Overrides {
  return {
    log: { level: 'warn' },
    redis: { addr: redis },
    metadata: { postgres: { url: postgres, poolsize: POOL_SIZE }, reconcile: { interval: `${RECONCILE_MS / 1000}s` } },
    http: { workers: 2 },
    storage: {
      redirect: { disable: true }, // every byte through the balancer
      cache: { blobdescriptor: 'redis' },
      maintenance: {
        uploadpurging: { enabled: true, age: '2m', interval: '20s' },
        gc: { enabled: true, interval: `${GC.intervalMs / 1000}s`, delay: `${GC.delayMs / 1000}s` },
        retention: {
          enabled: true,
          interval: '5s',
          policies: [
            {
              repositories: [RETENTION.glob],
              keep: { tags: ['keep-.*'] },
              delete: { tagsolderthan: `${RETENTION.tagsOlderThanMs / 1000}s`, untaggedolderthan: `${RETENTION.untaggedOlderThanMs / 1000}s` },
            },
          ],
        },
      },
    },
  };
}

/** the children a process has now (Linux: /proc/<pid>/task/<pid>/children) */
function childrenOf(pid: number): number[] {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return [];
  }
}

export async function startCluster(instances = 3): Promise<SoakCluster> {
  let ceph: CephS3 | undefined;
  let redis: TestRedis | undefined;
  let postgres: TestPostgres | undefined;
  let balancer: Balancer | undefined;
  let work: string | undefined;
  const slots: Slot[] = [];
  const stopInstances = async () => {
    await balancer?.stop().catch(() => undefined);
    await Promise.all(slots.flatMap((s) => [...s.dead, ...(s.process ? [s.process] : [])]).map((p) => p.stop().catch(() => undefined)));
  };
  const stop = async () => {
    await stopInstances();
    await redis?.stop().catch(() => undefined);
    await postgres?.stop().catch(() => undefined);
    await ceph?.stop().catch(() => undefined);
    if (work) await rm(work, { recursive: true, force: true });
  };
  try {
    // at once (initdb takes seconds on a busy machine); each is kept as it comes, so stop() ends it if another failed
    const [cephUp, redisUp, postgresUp] = await Promise.allSettled([
      startCeph({ memstoreBytes: 8 * 1024 * MiB }).then((c) => (ceph = c)), // a long run's layers and open uploads live in the OSD's RAM
      startRedis().then((r) => (redis = r)),
      startPostgres().then((p) => (postgres = p)),
    ]);
    if (cephUp.status === 'rejected') throw cephUp.reason;
    if (redisUp.status === 'rejected') throw redisUp.reason;
    if (postgresUp.status === 'rejected') throw postgresUp.reason;
    [ceph, redis, postgres] = [cephUp.value, redisUp.value, postgresUp.value];
    const bucket = await ceph.createBucket('soak');
    const s3 = ceph.params(bucket, { rootdirectory: ROOT_DIRECTORY, chunksize: 6 * MiB });
    const config = instanceConfig(redis.addr, await postgres.createDatabase('berth'));
    work = await mkdtemp(join(tmpdir(), 'berth-soak-'));
    const commandConfig = join(work, 'command.yml');
    await writeFile(commandConfig, stringify({ version: '0.1', log: { level: 'warn' }, ...config, http: {}, storage: { ...(config.storage as object), s3, delete: { enabled: true } } }));
    const start = async (slot: Slot) => {
      slot.process = await startBerthProcess({ s3, config, port: slot.port, startTimeoutMs: 90_000 });
    };
    for (let i = 0; i < instances; i++) slots.push({ index: i, port: await freePort(), dead: [] });
    // one at a time: the first writes the shared state the others read, and the machine is small
    for (const slot of slots) await start(slot);
    // /readyz probes the store (2 s bound): HAProxy's check must not give up before it answers
    balancer = await startHaproxy(
      slots.map((s) => `http://127.0.0.1:${s.port}`),
      { defaults: ['timeout check 5s'] },
    );
    const cephDir = ceph.dir;
    return {
      url: balancer.url,
      slots,
      ceph,
      bucket,
      s3,
      commandConfig,
      rgwPid: () => Number(readFileSync(join(cephDir, 'run/rgw.pid'), 'utf8').trim()),
      pids: (slot) => (slot.process ? [slot.process.pid, ...childrenOf(slot.process.pid)] : []),
      start,
      stopInstances,
      stop,
    };
  } catch (err) {
    await stop();
    throw err;
  }
}
