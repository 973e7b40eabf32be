import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Scheduler } from '../../src/scheduler/scheduler.js';
import { ManualClock } from '../helpers/manual-clock.js';

function recordingLogger() {
  const errors: { task: string; message: string }[] = [];
  return { errors, logger: { error: (obj: { err: Error; task: string }) => void errors.push({ task: obj.task, message: obj.err.message }) } };
}

test('a task runs after firstDelay, then every interval from the end of the previous run', async () => {
  const clock = new ManualClock();
  const { logger } = recordingLogger();
  const scheduler = new Scheduler(logger, clock);
  const runs: number[] = [];
  const start = clock.now();
  scheduler.every({ name: 't', interval: 1000, firstDelay: 100, run: () => void runs.push(clock.now() - start) });
  await clock.advance(99);
  assert.deepEqual(runs, []);
  await clock.advance(1);
  assert.deepEqual(runs, [100]);
  await clock.advance(2000);
  assert.deepEqual(runs, [100, 1100, 2100]);
  await scheduler.close();
});

test('a run that takes time is never overlapped by the next one', async () => {
  const clock = new ManualClock();
  const scheduler = new Scheduler(recordingLogger().logger, clock);
  let active = 0;
  let maxActive = 0;
  let release!: () => void;
  scheduler.every({
    name: 'slow',
    interval: 10,
    run: async () => {
      active++;
      maxActive = Math.max(maxActive, active);
      await new Promise<void>((resolve) => (release = resolve));
      active--;
    },
  });
  await clock.advance(100);
  assert.equal(active, 1);
  release();
  await clock.advance(100);
  assert.equal(maxActive, 1);
  release();
  await scheduler.close();
});

test('a failing run is logged under the task name and the task goes on', async () => {
  const clock = new ManualClock();
  const { logger, errors } = recordingLogger();
  const scheduler = new Scheduler(logger, clock);
  let calls = 0;
  scheduler.every({
    name: 'flaky',
    interval: 10,
    run: () => {
      calls++;
      if (calls === 1) throw new Error('boom');
    },
  });
  await clock.advance(30);
  assert.equal(calls, 3);
  assert.deepEqual(errors, [{ task: 'flaky', message: 'boom' }]);
  await scheduler.close();
});

test('stop() and close() end tasks; close() aborts a run in progress and waits for it', async () => {
  const clock = new ManualClock();
  const scheduler = new Scheduler(recordingLogger().logger, clock);
  let stoppedRuns = 0;
  const stop = scheduler.every({ name: 'a', interval: 10, run: () => void stoppedRuns++ });
  await clock.advance(10);
  stop();
  await clock.advance(100);
  assert.equal(stoppedRuns, 1);

  let sawAbort = false;
  scheduler.every({
    name: 'long',
    interval: 10,
    run: (signal) => new Promise<void>((resolve) => signal.addEventListener('abort', () => ((sawAbort = true), resolve()))),
  });
  await clock.advance(10);
  await scheduler.close();
  assert.equal(sawAbort, true);
  assert.throws(() => scheduler.every({ name: 'late', interval: 1, run: () => {} }), /scheduler is closed/);
});
