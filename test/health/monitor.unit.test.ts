/** The health monitor's verdicts: Distribution's threshold rule, on a manual clock. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { HealthMonitor } from '../../src/health/monitor.js';
import { Scheduler } from '../../src/scheduler/scheduler.js';
import { ManualClock } from '../helpers/manual-clock.js';

describe('HealthMonitor', () => {
  it('a check fails after `threshold` failures in a row and passes at its first success', async () => {
    const clock = new ManualClock();
    const scheduler = new Scheduler(pino({ level: 'silent' }), clock);
    const monitor = new HealthMonitor(scheduler, pino({ level: 'silent' }));
    let healthy = true;
    monitor.add('store', async () => {
      if (!healthy) throw new Error('store down');
    }, { interval: 1000, threshold: 3 });
    await clock.advance(0);
    assert.deepEqual(monitor.failures(), {});
    healthy = false;
    await clock.advance(1000);
    await clock.advance(1000);
    assert.deepEqual(monitor.failures(), {}, 'two failures in a row are under the threshold');
    await clock.advance(1000);
    assert.deepEqual(monitor.failures(), { store: 'store down' });
    healthy = true;
    await clock.advance(1000);
    assert.deepEqual(monitor.failures(), {});
    await scheduler.close();
  });

  it('threshold 0 (the default) fails at the first failure, and a success in between resets the count', async () => {
    const clock = new ManualClock();
    const scheduler = new Scheduler(pino({ level: 'silent' }), clock);
    const monitor = new HealthMonitor(scheduler, pino({ level: 'silent' }));
    const results = [true, false, true, false, false];
    monitor.add('a', async () => {
      if (!results.shift()) throw new Error('down');
    }, { interval: 10, threshold: 0 });
    const seen: number[] = [];
    for (let i = 0; i < 5; i++) {
      await clock.advance(i === 0 ? 0 : 10);
      seen.push(Object.keys(monitor.failures()).length);
    }
    assert.deepEqual(seen, [0, 1, 0, 1, 1]);
    await scheduler.close();
  });
});
