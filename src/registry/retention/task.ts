/** The retention pass as a scheduled task whose schedule lives in storage (../shared-schedule.ts). */
import type { Logger } from 'pino';
import type { EventSink } from '../../notifications/events.js';
import type { Clock } from '../../scheduler/clock.js';
import type { PeriodicTask } from '../../scheduler/scheduler.js';
import type { StorageDriver } from '../../storage/driver.js';
import { sharedPass } from '../shared-schedule.js';
import { applyRetention } from './index.js';
import type { RepositorySink } from '../indexing/sink.js';
import { compilePolicies, type RetentionPolicy } from './policy.js';

export interface RetentionTaskOptions {
  policies: RetentionPolicy[];
  interval: number;
  dryrun: boolean;
  /** tags that are never deleted (immutable tags) */
  fixedTag?(repository: string, tag: string): boolean;
}

export function retentionTask(driver: StorageDriver, options: RetentionTaskOptions, events: EventSink, clock: Clock, logger: Logger, index?: RepositorySink): PeriodicTask {
  const policies = compilePolicies(options.policies);
  return sharedPass(driver, clock, logger, {
    name: 'retention',
    stateName: 'retention',
    interval: options.interval,
    async run(signal) {
      const started = clock.now();
      // a dry run says at info level what would go; a real one at debug (its events say it too)
      const report = (line: string) => (options.dryrun ? logger.info(line) : logger.debug(line));
      const summary = await applyRetention(driver, { policies, fixedTag: options.fixedTag, now: started, dryRun: options.dryrun, events, signal, report, index });
      logger.info({ ...summary, dryRun: options.dryrun, durationMs: clock.now() - started }, 'retention pass done (blobs are freed by garbage collection)');
    },
  });
}
