/**
 * The scheduled online collection: on each tick, the instance that takes the lease collects
 * (online.ts) while renewing it; the others skip the tick.
 */
import type { Logger } from 'pino';
import type { PeriodicTask } from '../../scheduler/scheduler.js';
import type { StorageDriver } from '../../storage/driver.js';
import { Lease } from './lease.js';
import { collectOnline, type OnlineSummary } from './online.js';

export interface CollectionSettings {
  interval: number;
  delay: number;
  dryrun: boolean;
  deleteuntagged: boolean;
}

/** how long a lease lasts without renewal, and how long a taker waits before reading it back */
export const LEASE_TTL_MS = 5 * 60_000;
export const LEASE_SETTLE_MS = 2_000;

export function collectionTask(
  driver: StorageDriver,
  settings: CollectionSettings,
  logger: Pick<Logger, 'info' | 'warn'>,
  done: (summary: OnlineSummary) => void,
  lease = new Lease(driver, { ttlMs: LEASE_TTL_MS, settleMs: LEASE_SETTLE_MS }),
): PeriodicTask {
  return {
    name: 'garbage collection',
    interval: settings.interval,
    async run() {
      const ran = await underLease(lease, logger, async () => {
        const summary = await collectOnline(driver, { delayMs: settings.delay, dryRun: settings.dryrun, deleteUntagged: settings.deleteuntagged });
        done(summary);
        logger.info({ ...summary, dryRun: settings.dryrun }, onlineLine(summary, settings.dryrun, settings.deleteuntagged));
      });
      if (!ran) logger.info('garbage collection: another instance holds the lease; skipping this round');
    },
  };
}

/**
 * runs `collect` holding the lease, renewed meanwhile and released after; false (without running
 * it) when another collector holds the lease. Also used by `berth garbage-collect` beside live
 * instances (src/cli.ts).
 */
export async function underLease(lease: Lease, logger: Pick<Logger, 'warn'>, collect: () => Promise<void>): Promise<boolean> {
  if (!(await lease.acquire())) return false;
  const renewal = setInterval(() => {
    lease.renew().then(
      (held) => held || logger.warn('garbage collection: the lease was taken over while collecting'),
      (err) => logger.warn({ err }, 'garbage collection: could not renew the lease'),
    );
  }, LEASE_TTL_MS / 3);
  renewal.unref();
  try {
    await collect();
    return true;
  } finally {
    clearInterval(renewal);
    await lease.release();
  }
}

/** an online collection's summary as one line */
export function onlineLine(summary: OnlineSummary, dryRun: boolean, deleteUntagged: boolean): string {
  return `garbage collection${dryRun ? ' (dry run)' : ''}: ${deleteUntagged ? `${summary.manifestsDeleted} untagged manifests deleted (${summary.manifestsRestored} restored), ` : ''}${summary.blobsTrashed} blobs (${summary.bytesTrashed} bytes) to the trash, ${summary.blobsPurged} (${summary.bytesFreed} bytes) deleted from it, ${summary.blobsRestored} restored, ${summary.blobsSpared} spared, in ${(summary.durationMs / 1000).toFixed(2)}s`;
}
