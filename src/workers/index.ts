/**
 * Several worker processes on one port (http.workers > 1): this process becomes the primary of a
 * node:cluster; each worker runs the whole registry (`berth serve` again, with its index in
 * BERTH_WORKER_INDEX) and the cluster hands connections out round robin. See docs/decisions.md,
 * "Several workers".
 *
 * - The first worker starts alone: it keeps the generated upload secret in storage (when
 *   http.secret is unset) before the others read it. It alone runs the periodic tasks (purge,
 *   collection, retention, expiry) and logs the banner.
 * - A worker that dies is started again under its index (after a second when it died young, so a
 *   worker that cannot start does not spin); requests on the others go on.
 * - SIGTERM or SIGINT is passed to every worker, each drains as a single process does, and the
 *   primary exits once they all have.
 * - The debug listener is the primary's: it asks every worker over IPC and serves the sum
 *   (`/debug/vars`, Prometheus), or every failing check (`/debug/health`).
 */
import cluster, { type Worker } from 'node:cluster';
import type { Logger } from 'pino';
import { parseAddr } from '../http/address.js';

export interface WorkersOptions {
  count: number;
  logger: Logger;
  /** http.debug, when set: the primary serves it */
  debug?: { addr: string; prometheus: { enabled: boolean; path: string } };
}

export const WORKER_INDEX_VARIABLE = 'BERTH_WORKER_INDEX';

/** this process's worker index, undefined when it is no worker */
export function workerIndex(): number | undefined {
  return cluster.isWorker ? Number(process.env[WORKER_INDEX_VARIABLE]) : undefined;
}

/** a worker that dies sooner than this after its start is started again only after RESTART_DELAY_MS */
const YOUNG_MS = 5000;
const RESTART_DELAY_MS = 1000;

/** runs the workers until SIGTERM/SIGINT and they have all exited; the exit code */
export async function runWorkers(options: WorkersOptions): Promise<number> {
  const { count, logger } = options;
  let stopping = false;
  const started = new Map<Worker, { index: number; at: number }>();

  const fork = (index: number): Promise<void> =>
    new Promise((resolve) => {
      const worker = cluster.fork({ [WORKER_INDEX_VARIABLE]: String(index) });
      started.set(worker, { index, at: Date.now() });
      worker.once('listening', () => resolve());
      worker.once('exit', () => resolve());
    });

  cluster.on('exit', (worker, code, signal) => {
    const info = started.get(worker);
    started.delete(worker);
    if (stopping || !info) return;
    const young = Date.now() - info.at < YOUNG_MS;
    logger.error({ worker: info.index, pid: worker.process.pid, code, signal }, `worker ${info.index} died; starting it again${young ? ` in ${RESTART_DELAY_MS / 1000}s` : ''}`);
    setTimeout(() => void fork(info.index), young ? RESTART_DELAY_MS : 0);
  });

  // the first alone: it writes what the others read (the upload secret)
  await fork(0);
  await Promise.all(Array.from({ length: count - 1 }, (_, i) => fork(i + 1)));
  logger.info({ workers: count, pids: [...started.keys()].map((w) => w.process.pid) }, `berth is serving with ${count} worker processes`);

  // loaded only when configured, as a single process's listener is (test/app/lazy-modules.test.ts)
  const debugServer = options.debug && (await (await import('./debug.js')).startPrimaryDebugServer(parseAddr(options.debug.addr), { prometheus: options.debug.prometheus, logger }));

  await new Promise<void>((resolve) => {
    const stop = (signal: NodeJS.Signals) => {
      if (stopping) return;
      stopping = true;
      logger.info({ signal }, 'shutting down: every worker drains');
      for (const worker of started.keys()) worker.process.kill('SIGTERM');
      const check = () => (started.size === 0 ? resolve() : undefined);
      cluster.on('exit', check);
      check();
    };
    process.once('SIGTERM', stop);
    process.once('SIGINT', stop);
  });
  await debugServer?.close();
  return 0;
}
