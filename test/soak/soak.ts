/**
 * One soak run: the cluster (cluster.ts), clients (clients.ts) and faults (faults.ts) for
 * `seconds`, a checker pulling acknowledged manifests all along, then the final checks: every
 * manifest and tag the ledger says must be served is, with every blob hashing to its digest; no
 * 5xx that no fault explains; `berth uploads purge` leaves no multipart upload in the bucket;
 * `berth verify` exits 0; `berth verify --index` compares the index on PostgreSQL with the
 * bucket after the reconciler's passes: no difference a kill, retention or the collection does not
 * explain (index-check.ts). Used by `npm run soak` (run.ts) and by soak.test.ts.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { ListMultipartUploadsCommand, S3Client } from '@aws-sdk/client-s3';
import { REPO_ROOT } from '../helpers/berth-process.js';
import { CEPH_ACCESS_KEY, CEPH_SECRET_KEY } from '../helpers/ceph.js';
import { cleanEnv, spawnLogged } from '../helpers/processes.js';
import { Checker, type Loss } from './checker.js';
import { Client, type OpCounts, type Shared } from './clients.js';
import { RECONCILE_MS, RETENTION, startCluster, type SoakCluster } from './cluster.js';
import { FaultInjector, type Fault } from './faults.js';
import { explainIndexDifferences, type IndexDifferences } from './index-check.js';
import { Ledger } from './ledger.js';
import { Random } from './random.js';
import { Wire, type Exchange } from './wire.js';

export interface SoakOptions {
  seconds: number;
  clients: number;
  seed: number;
  log: (line: string) => void;
}

export interface SoakReport {
  seed: number;
  seconds: number;
  clients: number;
  operations: number;
  ops: Record<string, OpCounts>;
  requests: number;
  /** manifest pushes answered 201 */
  acknowledged: number;
  faults: Fault[];
  checks: number;
  /** manifests and tags found gone that the retention policy may have removed */
  removed: number;
  lost: Loss[];
  finalCheck: { manifests: number; tags: number; inconclusive: number };
  serverErrors: number;
  /** 5xx that no store pause (or, for HAProxy's own, no kill) explains */
  unexplainedServerErrors: Exchange[];
  cuts: number;
  unexplainedCuts: Exchange[];
  unexpected: string[];
  /** multipart uploads left in the bucket after `berth uploads purge` */
  multipartLeft: string[];
  purge: { code: number | null; output: string };
  /** `berth verify`: exit code, summary line, findings split into layer links naming a collected blob (the online collection leaves them) and the others */
  verify: { code: number | null; summary: string; collectedBlobLinks: number; others: string[] };
  /** `berth verify --index`: exit code, summary line, the differences between the index and storage by what explains them (index-check.ts) */
  verifyIndex: { code: number | null; summary: string } & IndexDifferences;
  /** /readyz answers other than 200 (or slower than 2 s), asked of each instance directly every second: what HAProxy's health checks saw */
  notReady: string[];
  /** error lines the instances logged (the first ones) */
  instanceErrors: string[];
}

export function passed(report: SoakReport): boolean {
  return (
    report.lost.length === 0 &&
    report.unexplainedServerErrors.length === 0 &&
    report.multipartLeft.length === 0 &&
    report.purge.code === 0 &&
    report.verify.code === 0 &&
    (report.verifyIndex.code === 0 || report.verifyIndex.code === 1) &&
    report.verifyIndex.unexplained.length === 0
  );
}

/** runs `berth <args>` (from the sources) to its end */
async function berth(args: string[]): Promise<{ code: number | null; output: string }> {
  const proc = await spawnLogged(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args], { cwd: REPO_ROOT, env: cleanEnv({ dropPrefixes: ['REGISTRY_'] }), label: `berth ${args[0]}` });
  const { code } = await proc.exited;
  return { code, output: proc.logs() };
}

async function forEachLimited<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(Array.from({ length: limit }, async () => {
    while (next < items.length) await fn(items[next++]);
  }));
}

export async function runSoak(options: SoakOptions): Promise<SoakReport> {
  const { log } = options;
  const random = new Random(options.seed);
  const started = Date.now();
  log(`soak: seed ${options.seed}, ${options.seconds} s, ${options.clients} clients; starting Ceph, Redis, 3 berth instances (2 workers each), HAProxy`);
  const cluster: SoakCluster = await startCluster();
  const faults = new FaultInjector(cluster, new Random(random.int(0, 0xffffffff)));
  const notReady: string[] = [];
  try {
    log(`soak: ready in ${((Date.now() - started) / 1000).toFixed(0)} s at ${cluster.url}`);
    const wire = new Wire(cluster.url);
    const ledger = new Ledger();
    const checker = new Checker(wire, ledger, (span) => faults.killDuring(span));
    const shared: Shared = { wire, ledger, checker, ops: new Map(), unexpected: [], acknowledged: { count: 0 } };
    const until = Date.now() + options.seconds * 1000;
    const operations = () => [...shared.ops.values()].reduce((n, c) => n + c.ok + c.interrupted + c.failed, 0);
    const progress = setInterval(() => {
      log(`soak: ${Math.max(0, Math.round((until - Date.now()) / 1000))} s left: ${operations()} operations, ${shared.acknowledged.count} acknowledged pushes, ${faults.faults.length} faults, ${checker.checks} checks, lost ${checker.losses.size}`);
    }, 30_000);
    try {
      const checking = async () => {
        while (Date.now() < until) {
          const live = ledger.live();
          if (live.length > 0) await checker.check(random.pick(live));
          await sleep(250);
        }
      };
      const readiness = async () => {
        while (Date.now() < until) {
          await Promise.all(
            cluster.slots.filter((slot) => slot.process).map(async (slot) => {
              const asked = slot.process!;
              const start = Date.now();
              const detail = await fetch(`http://127.0.0.1:${slot.port}/readyz`, { signal: AbortSignal.timeout(5000) }).then(
                async (res) => (res.status === 200 ? '' : `${res.status} ${(await res.text()).slice(0, 200)}`),
                (err: Error) => err.name,
              );
              const ms = Date.now() - start;
              if ((detail || ms > 2000) && slot.process === asked && !asked.hasExited() && notReady.length < 200) notReady.push(`${at(start)} instance ${slot.index}: ${detail || 'ready'} after ${ms} ms`);
            }),
          );
          await sleep(1000);
        }
      };
      await Promise.all([
        readiness(),
        ...Array.from({ length: options.clients }, (_, i) => new Client(i, shared, new Random(random.int(0, 0xffffffff))).run(until)),
        faults.run(until, log),
        checking(),
      ]);
    } finally {
      clearInterval(progress);
      faults.resume();
    }

    // the final check, with every instance up and the store answering
    await sleep(3000);
    log(`soak: load over after ${options.seconds} s (${operations()} operations); checking ${ledger.live().length} live manifests and ${ledger.tags.size} tags`);
    let inconclusive = 0;
    let manifests = 0;
    let tags = 0;
    await forEachLimited(ledger.live(), 4, async (rec) => {
      manifests++;
      for (let attempt = 0; attempt < 3; attempt++) {
        if ((await checker.check(rec)) !== 'inconclusive') return;
        await sleep(1000);
      }
      inconclusive++;
    });
    await forEachLimited([...ledger.tags.values()].filter((t) => t.live), 4, async (tag) => {
      tags++;
      if ((await checker.checkTag(tag)) === 'inconclusive') inconclusive++;
    });

    // what a kill left between a storage write and its index write, the reconciler repairs within
    // its interval (cluster.ts: RECONCILE_MS): give it a few passes with the instances up and idle
    const reconciled = Date.now() + 6 * RECONCILE_MS;
    while ((await berth(['verify', '--index', cluster.commandConfig])).code !== 0 && Date.now() < reconciled) await sleep(RECONCILE_MS);
    await cluster.stopInstances();
    const purge = await berth(['uploads', 'purge', '--older-than', '0s', cluster.commandConfig]);
    const s3 = new S3Client({
      region: 'us-east-1',
      endpoint: cluster.ceph.endpoint,
      forcePathStyle: true,
      credentials: { accessKeyId: CEPH_ACCESS_KEY, secretAccessKey: CEPH_SECRET_KEY },
    });
    let multipartLeft: string[];
    try {
      const listed = await s3.send(new ListMultipartUploadsCommand({ Bucket: cluster.bucket }));
      multipartLeft = (listed.Uploads ?? []).map((u) => `${u.Key} (${u.UploadId}, started ${u.Initiated?.toISOString()})`);
    } finally {
      s3.destroy();
    }
    log('soak: running berth verify');
    const verify = await berth(['verify', cluster.commandConfig]);
    log('soak: running berth verify --index');
    const verifyIndex = await berth(['verify', '--index', cluster.commandConfig]);
    const indexLines = verifyIndex.output.trim().split('\n');
    const indexDifferences = explainIndexDifferences(verifyIndex.code === 1 ? indexLines.slice(0, -1) : [], {
      verifyOutput: verify.output,
      writes: wire.writes,
      killDuring: (exchange) => faults.killDuring(exchange),
      retentionPrefix: RETENTION.prefix,
    });

    const findings = verify.output.split('\n').filter((l) => l.startsWith('damaged:'));
    const processes = cluster.slots.flatMap((s) => [...s.dead, ...(s.process ? [s.process] : [])]);
    const instanceErrors = processes.flatMap((p) => p.logs().split('\n').filter((l) => /"level":(50|60)|\berror\b/i.test(l))).slice(0, 30);
    return {
      seed: options.seed,
      seconds: options.seconds,
      clients: options.clients,
      operations: operations(),
      ops: Object.fromEntries([...shared.ops].sort()),
      requests: wire.requests,
      acknowledged: shared.acknowledged.count,
      faults: faults.faults,
      checks: checker.checks,
      removed: checker.removed.size,
      lost: [...checker.losses.values()],
      finalCheck: { manifests, tags, inconclusive },
      serverErrors: wire.serverErrors.length,
      unexplainedServerErrors: wire.serverErrors.filter((e) => !faults.explain(e)),
      cuts: wire.cuts.length,
      unexplainedCuts: wire.cuts.filter((e) => !faults.explain(e)),
      unexpected: shared.unexpected,
      multipartLeft,
      purge: { code: purge.code, output: purge.output.slice(-2000) },
      verify: {
        code: verify.code,
        summary: verify.output.trim().split('\n').at(-1) ?? '',
        collectedBlobLinks: findings.filter((l) => COLLECTED_BLOB_LINK.test(l)).length,
        others: findings.filter((l) => !COLLECTED_BLOB_LINK.test(l)),
      },
      verifyIndex: { code: verifyIndex.code, summary: indexLines.at(-1) ?? '', ...indexDifferences },
      notReady,
      instanceErrors,
    };
  } finally {
    faults.resume();
    await cluster.stop();
  }
}

const COLLECTED_BLOB_LINK = /layer link .* names a blob that is not stored/;

const seconds = (ms: number) => `${(ms / 1000).toFixed(1)} s`;
const at = (ms: number) => new Date(ms).toISOString().slice(11, 23);

/** the report for people: figures first, then every finding */
export function formatReport(r: SoakReport): string {
  const counts = { 'instance-kill': 0, 'worker-kill': 0, 'store-pause': 0 };
  for (const f of r.faults) counts[f.kind]++;
  const lines = [
    `soak ${passed(r) ? 'PASSED' : 'FAILED'}: seed ${r.seed}, ${r.seconds} s of load, ${r.clients} clients`,
    `operations: ${r.operations} (${r.requests} HTTP requests, ${r.acknowledged} manifest pushes acknowledged, ${r.checks} pull checks)`,
    ...Object.entries(r.ops).map(([name, c]) => `  ${name.padEnd(16)} ok ${c.ok}, interrupted by faults ${c.interrupted}, unexpected answers ${c.failed}`),
    `faults injected: ${r.faults.length} (instances killed with SIGKILL: ${counts['instance-kill']}, workers killed: ${counts['worker-kill']}, radosgw paused: ${counts['store-pause']}, ${seconds(r.faults.filter((f) => f.kind === 'store-pause').reduce((n, f) => n + f.end - f.start, 0))} in all)`,
    `lost: ${r.lost.length}`,
    ...r.lost.slice(0, 30).map((l) => `  LOST ${l.repo}${l.tag ? `:${l.tag}` : ''}@${l.digest}: ${l.what}; last acknowledged push ${seconds(l.age)} earlier; at ${l.at}${l.servedBy ? ` from ${l.servedBy}` : ''}`),
    `manifests and tags found removed by the retention policy (allowed): ${r.removed}`,
    `final check: ${r.finalCheck.manifests} manifests, ${r.finalCheck.tags} tags, ${r.finalCheck.inconclusive} inconclusive`,
    `5xx: ${r.serverErrors} (${r.unexplainedServerErrors.length} outside the store's pauses)`,
    ...r.unexplainedServerErrors.slice(0, 20).map((e) => `  5xx ${at(e.start)}-${at(e.end)} ${e.method} ${e.path}: ${e.status} from ${e.servedBy ?? 'haproxy'}: ${e.detail}`),
    `requests cut without an answer: ${r.cuts} (${r.unexplainedCuts.length} with no fault in flight)`,
    ...r.unexplainedCuts.slice(0, 10).map((e) => `  cut ${at(e.start)}-${at(e.end)} ${e.method} ${e.path}: ${e.detail}`),
    `unexpected answers: ${r.unexpected.length}`,
    ...r.unexpected.slice(0, 20).map((u) => `  ${u}`),
    `multipart uploads left after berth uploads purge (exit ${r.purge.code}): ${r.multipartLeft.length}`,
    ...r.multipartLeft.slice(0, 10).map((k) => `  ${k}`),
    `berth verify: exit ${r.verify.code}: ${r.verify.summary}`,
    ...(r.verify.code === 0 ? [] : [`  findings: ${r.verify.collectedBlobLinks} layer links naming a blob the online collection removed; ${r.verify.others.length} others`]),
    ...r.verify.others.slice(0, 30).map((l) => `  ${l}`),
    `berth verify --index: exit ${r.verifyIndex.code}: ${r.verifyIndex.summary}`,
    ...(r.verifyIndex.code === 0
      ? []
      : [
          `  where to look: ${r.verifyIndex.retention} by retention, ${r.verifyIndex.collected} by the online collection, ${r.verifyIndex.killed} by a kill during a write; ${r.verifyIndex.unexplained.length} unexplained`,
        ]),
    ...r.verifyIndex.unexplained.slice(0, 30).map((l) => `  ${l}`),
    `faults: ${r.faults.map((f) => `${at(f.start)} ${f.kind}${f.instance === undefined ? '' : ` ${f.instance}`} ${seconds(f.end - f.start)}`).join('; ')}`,
    `/readyz not 200 or slower than 2 s: ${r.notReady.length}`,
    ...r.notReady.slice(0, 20).map((l) => `  ${l}`),
    ...(r.instanceErrors.length ? [`instance error log lines (first ${r.instanceErrors.length}):`, ...r.instanceErrors.map((l) => `  ${l.slice(0, 400)}`)] : []),
  ];
  return lines.join('\n');
}
