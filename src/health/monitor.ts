/**
 * Polls health checks on the scheduler and holds their verdicts, so a request asks "healthy?"
 * without waiting for a probe. A check counts as failing after `threshold` failures in a row
 * (0 or 1: the first failure), and healthy again at its first success, as Distribution's
 * threshold updater does.
 */
import type { Logger } from 'pino';
import type { Scheduler } from '../scheduler/scheduler.js';
import type { Check } from './checks.js';

export interface Polling {
  interval: number;
  threshold: number;
}

interface State {
  failuresInARow: number;
  threshold: number;
  lastError?: string;
}

export class HealthMonitor {
  private readonly states = new Map<string, State>();

  constructor(
    private readonly scheduler: Scheduler,
    private readonly logger: Pick<Logger, 'warn' | 'info'>,
  ) {}

  /** polls `check` every `interval` (the first time at once) under `name`, as Distribution names it in /debug/health */
  add(name: string, check: Check, polling: Polling): void {
    const state: State = { failuresInARow: 0, threshold: Math.max(1, polling.threshold) };
    this.states.set(name, state);
    this.scheduler.every({
      name: `health check ${name}`,
      interval: polling.interval,
      firstDelay: 0,
      run: async () => {
        try {
          await check();
          if (state.failuresInARow >= state.threshold) this.logger.info({ check: name }, 'health check passes again');
          state.failuresInARow = 0;
          state.lastError = undefined;
        } catch (err) {
          state.failuresInARow++;
          state.lastError = (err as Error).message || String(err);
          if (state.failuresInARow === state.threshold) {
            this.logger.warn({ check: name, error: state.lastError }, 'health check failing: the registry answers 503 until it passes');
          }
        }
      },
    });
  }

  /** check name -> its last error, for the checks that are failing; empty when healthy */
  failures(): Record<string, string> {
    const failing: Record<string, string> = {};
    for (const [name, state] of this.states) {
      if (state.failuresInARow >= state.threshold && state.lastError !== undefined) failing[name] = state.lastError;
    }
    return failing;
  }
}
