/**
 * The one mechanism that decides which instance does a periodic pass shared by every instance on
 * one store (garbage collection, proxy expiry, retention). The pass's schedule lives in storage
 * (layout.scheduleState), so it survives restarts: each instance looks every `poll` ms, and the
 * one that finds the last pass `interval` old and not held claims the next: it writes its claim,
 * waits `settleMs` (on the scheduler's clock), and reads it back; only the last writer runs.
 * While it runs, it renews a hold on the claim, so a pass longer than `interval` is not started
 * again elsewhere; a holder that died stops renewing and its hold expires after HOLD_MS.
 *
 * Storage offers no compare-and-swap: two instances whose claims land within the settle time can
 * both run the pass. Every pass that uses this is safe run twice (docs/decisions.md, "Proxy TTL
 * expiry", "Garbage collection (online)"); the claim saves the duplicate work. Clocks of the
 * instances are assumed to agree to well within the hold.
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
  /** while the pass runs: until when its instance holds it (renewed); absent once it is done */
  heldUntil?: number;
}

export interface SharedPassOptions {
  /** shown in logs, e.g. "proxy expiry" */
  name: string;
  /** the state file's name under _berth/schedule/ */
  stateName: string;
  /** ms from the start of one pass (by any instance) to the start of the next */
  interval: number;
  /** ms between writing a claim and reading it back (default 0: instances claiming at the same moment may both run) */
  settleMs?: number;
  /** one pass */
  run(signal: AbortSignal): Promise<void>;
}

/** how often an instance looks whether a pass is due, at most */
export const SCHEDULE_POLL_MS = 60_000;
/** how long a running pass's hold lasts without renewal; renewed every third of it */
export const HOLD_MS = 5 * 60_000;

export function sharedPass(driver: StorageDriver, clock: Clock, logger: Pick<Logger, 'debug' | 'warn'>, options: SharedPassOptions): PeriodicTask {
  const instance = randomUUID();
  const path = layout.scheduleState(options.stateName);
  const settleMs = options.settleMs ?? 0;
  const read = async (): Promise<ScheduleState | undefined> => {
    const content = await unlessMissing(driver.getContent(path));
    try {
      return content && (JSON.parse(content.toString()) as ScheduleState);
    } catch {
      return undefined; // unreadable: as if no pass ever ran
    }
  };
  const write = (state: ScheduleState) => driver.putContent(path, Buffer.from(JSON.stringify(state)));
  return {
    name: options.name,
    interval: Math.min(options.interval, SCHEDULE_POLL_MS),
    async run(signal) {
      const now = clock.now();
      const last = await read();
      if (last && typeof last.heldUntil === 'number' && last.heldUntil > now && last.instance !== instance) return; // running elsewhere
      // a claim a little in the future is another instance's clock running ahead: still recent
      if (last && typeof last.started === 'number' && Math.abs(now - last.started) < options.interval) return;
      if (settleMs > 0 && clock.now() - now > settleMs / 2) return; // too slow to be sure: next time
      const claim: ScheduleState = { started: now, instance, heldUntil: now + HOLD_MS };
      await write(claim);
      if (settleMs > 0) await wait(clock, settleMs, signal);
      const back = await read();
      if (back?.instance !== instance || back.started !== now) {
        logger.debug({ task: options.name, by: back?.instance }, `${options.name}: another instance took this pass`);
        return;
      }
      const renewal = every(clock, HOLD_MS / 3, async () => {
        const current = await read();
        if (current?.instance !== instance || current.started !== now) return logger.warn(`${options.name}: another instance took the pass over while it ran`);
        await write({ ...claim, heldUntil: clock.now() + HOLD_MS });
      }, (err) => logger.warn({ err }, `${options.name}: could not renew the hold on this pass`));
      try {
        await options.run(signal);
      } finally {
        renewal();
        // done: the next pass is due `interval` after this one started
        if ((await read().catch(() => undefined))?.instance === instance) await write({ started: now, instance }).catch(() => undefined);
      }
    },
  };
}

/** resolves after `ms` on `clock`, or when `signal` aborts */
function wait(clock: Clock, ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const cancel = clock.after(ms, done);
    signal.addEventListener('abort', done, { once: true });
    function done() {
      cancel();
      signal.removeEventListener('abort', done);
      resolve();
    }
  });
}

/** calls `fn` every `ms` on `clock` until the returned function is called */
function every(clock: Clock, ms: number, fn: () => Promise<void>, failed: (err: unknown) => void): () => void {
  let cancel = clock.after(ms, tick);
  let stopped = false;
  function tick() {
    fn().then(
      () => undefined,
      failed,
    ).finally(() => {
      if (!stopped) cancel = clock.after(ms, tick);
    });
  }
  return () => {
    stopped = true;
    cancel();
  };
}
