/**
 * The scheduled online collection: one pass per interval among the instances sharing a store,
 * by the instance that claims it (../shared-schedule.ts); the others skip it.
 */
import type { Logger } from 'pino';
import type { Clock } from '../../scheduler/clock.js';
import type { PeriodicTask } from '../../scheduler/scheduler.js';
import type { StorageDriver } from '../../storage/driver.js';
import { sharedPass } from '../shared-schedule.js';
import { collectOnline, type OnlineSummary } from './online.js';
import type { RepositorySink } from '../indexing/sink.js';

export interface CollectionSettings {
  interval: number;
  delay: number;
  dryrun: boolean;
  deleteuntagged: boolean;
}

/** how long a claimant waits before reading its claim back: of instances ticking together, one collects */
export const CLAIM_SETTLE_MS = 2_000;

export function collectionTask(
  driver: StorageDriver,
  settings: CollectionSettings,
  clock: Clock,
  logger: Pick<Logger, 'info' | 'warn' | 'debug'>,
  done: (summary: OnlineSummary) => void,
  settleMs = CLAIM_SETTLE_MS,
  index?: RepositorySink,
): PeriodicTask {
  return sharedPass(driver, clock, logger, {
    name: 'garbage collection',
    stateName: 'gc',
    interval: settings.interval,
    settleMs,
    async run() {
      const summary = await collectOnline(driver, { delayMs: settings.delay, dryRun: settings.dryrun, deleteUntagged: settings.deleteuntagged, index });
      done(summary);
      logger.info({ ...summary, dryRun: settings.dryrun }, onlineLine(summary, settings.dryrun, settings.deleteuntagged));
    },
  });
}

/** an online collection's summary as one line */
export function onlineLine(summary: OnlineSummary, dryRun: boolean, deleteUntagged: boolean): string {
  return `garbage collection${dryRun ? ' (dry run)' : ''}: ${deleteUntagged ? `${summary.manifestsDeleted} untagged manifests deleted (${summary.manifestsRestored} restored), ` : ''}${summary.blobsTrashed} blobs (${summary.bytesTrashed} bytes) to the trash, ${summary.blobsPurged} (${summary.bytesFreed} bytes) deleted from it, ${summary.blobsRestored} restored, ${summary.blobsSpared} spared, in ${(summary.durationMs / 1000).toFixed(2)}s`;
}
