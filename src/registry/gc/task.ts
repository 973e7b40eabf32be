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
      if (!(await lease.acquire())) {
        logger.info('garbage collection: another instance holds the lease; skipping this round');
        return;
      }
      const renewal = setInterval(() => {
        lease.renew().then(
          (held) => held || logger.warn('garbage collection: the lease was taken over while collecting'),
          (err) => logger.warn({ err }, 'garbage collection: could not renew the lease'),
        );
      }, LEASE_TTL_MS / 3);
      renewal.unref();
      try {
        const summary = await collectOnline(driver, { delayMs: settings.delay, dryRun: settings.dryrun, deleteUntagged: settings.deleteuntagged });
        done(summary);
        logger.info({ ...summary, dryRun: settings.dryrun }, `garbage collection${settings.dryrun ? ' (dry run)' : ''}: ${settings.deleteuntagged ? `${summary.manifestsDeleted} untagged manifests deleted (${summary.manifestsRestored} restored), ` : ''}${summary.blobsTrashed} blobs (${summary.bytesTrashed} bytes) to the trash, ${summary.blobsPurged} (${summary.bytesFreed} bytes) deleted from it, ${summary.blobsRestored} restored, ${summary.blobsSpared} spared, in ${(summary.durationMs / 1000).toFixed(2)}s`);
      } finally {
        clearInterval(renewal);
        await lease.release();
      }
    },
  };
}
