/**
 * audit.retention: the records older than it are deleted by a pass every PRUNE_INTERVAL_MS that
 * one instance of those sharing the storage runs (registry/shared-schedule.ts). Two instances
 * running it at once delete the same rows: harmless.
 */
import type { Logger } from 'pino';
import { sharedPass } from '../registry/shared-schedule.js';
import type { Clock } from '../scheduler/clock.js';
import type { PeriodicTask } from '../scheduler/scheduler.js';
import type { StorageDriver } from '../storage/driver.js';

export const PRUNE_INTERVAL_MS = 60 * 60_000;

/** what the pass deletes from (metadata/audit.ts's AuditLog) */
export interface Prunable {
  prune(before: string): Promise<number>;
}

export function auditRetentionTask(driver: StorageDriver, log: Prunable, retentionMs: number, clock: Clock, logger: Logger): PeriodicTask {
  return sharedPass(driver, clock, logger, {
    name: 'audit retention',
    stateName: 'audit-retention',
    interval: PRUNE_INTERVAL_MS,
    async run() {
      const before = new Date(clock.now() - retentionMs).toISOString();
      const deleted = await log.prune(before);
      if (deleted > 0) logger.info({ deleted, before }, 'audit records past audit.retention deleted');
    },
  });
}
