/** The expiry pass as a scheduled task whose schedule lives in storage (../shared-schedule.ts). */
import type { Logger } from 'pino';
import type { Clock } from '../../scheduler/clock.js';
import type { PeriodicTask } from '../../scheduler/scheduler.js';
import type { StorageDriver } from '../../storage/driver.js';
import { sharedPass } from '../shared-schedule.js';
import { expireCache } from './index.js';
import type { RepositorySink } from '../indexing/sink.js';

export interface ExpiryTaskOptions {
  ttlOf(name: string): number | undefined;
  /** ms between passes (by any instance) */
  passInterval: number;
  /** tags that never expire (immutable tags) */
  fixedTag?(repository: string, tag: string): boolean;
}

export function expiryTask(driver: StorageDriver, options: ExpiryTaskOptions, clock: Clock, logger: Logger, index?: RepositorySink): PeriodicTask {
  return sharedPass(driver, clock, logger, {
    name: 'proxy expiry',
    stateName: 'proxy-expiry',
    interval: options.passInterval,
    async run(signal) {
      const started = clock.now();
      const summary = await expireCache(driver, { ttlOf: options.ttlOf, fixedTag: options.fixedTag, now: started, signal, report: (line) => logger.debug(line), index });
      if (summary.manifestsExpired + summary.tagsRemoved + summary.blobsDeleted > 0) {
        logger.info({ ...summary, durationMs: clock.now() - started }, 'expired cached content');
      }
    },
  });
}
