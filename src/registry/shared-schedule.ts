/**
 * A maintenance pass whose schedule lives in storage (layout.scheduleState), so it survives
 * restarts and is shared by every instance on one bucket: each instance looks every `poll` ms,
 * and the one that finds the last pass `interval` old claims the next (writes its own claim,
 * reads it back: the last writer wins). Two instances that claim at the same moment both run the
 * pass: the passes that use this are idempotent (docs/decisions.md, "Proxy TTL expiry").
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { Clock } from '../scheduler/clock.js';
import type { PeriodicTask } from '../scheduler/scheduler.js';
import { unlessMissing, type StorageDriver } from '../storage/driver.js';
import * as layout from './layout.js';

interface ScheduleState {
  /** when the last pass started, ms since the epoch */
  started: number;
  /** the instance that ran it */
  instance: string;
}

export interface SharedPassOptions {
  /** shown in logs, e.g. "proxy expiry" */
  name: string;
  /** the state file's name under _berth/schedule/ */
  stateName: string;
  /** ms from the start of one pass (by any instance) to the start of the next */
  interval: number;
  /** one pass */
  run(signal: AbortSignal): Promise<void>;
}

/** how often an instance looks whether a pass is due, at most */
export const SCHEDULE_POLL_MS = 60_000;

export function sharedPass(driver: StorageDriver, clock: Clock, logger: Pick<Logger, 'debug'>, options: SharedPassOptions): PeriodicTask {
  const instance = randomUUID();
  const path = layout.scheduleState(options.stateName);
  const read = async (): Promise<ScheduleState | undefined> => {
    const content = await unlessMissing(driver.getContent(path));
    try {
      return content && (JSON.parse(content.toString()) as ScheduleState);
    } catch {
      return undefined; // unreadable: as if no pass ever ran
    }
  };
  return {
    name: options.name,
    interval: Math.min(options.interval, SCHEDULE_POLL_MS),
    async run(signal) {
      const now = clock.now();
      const last = await read();
      // a claim a little in the future is another instance's clock running ahead: still recent
      if (last && typeof last.started === 'number' && Math.abs(now - last.started) < options.interval) return;
      const claim: ScheduleState = { started: now, instance };
      await driver.putContent(path, Buffer.from(JSON.stringify(claim)));
      const back = await read();
      if (back?.instance !== instance || back.started !== now) {
        logger.debug({ task: options.name, by: back?.instance }, `${options.name}: another instance took this pass`);
        return;
      }
      await options.run(signal);
    },
  };
}
