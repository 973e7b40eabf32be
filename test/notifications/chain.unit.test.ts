/**
 * The parts of an endpoint's chain without a network: the ignore filter, the bounded queue and the
 * retry with threshold and back-off, on a ManualClock (no test waits for time to pass).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { ignoreFilter } from '../../src/notifications/ignore.js';
import type { Outcome } from '../../src/notifications/metrics.js';
import { BoundedQueue } from '../../src/notifications/queue.js';
import { Retrying } from '../../src/notifications/retry.js';
import { ManualClock } from '../helpers/manual-clock.js';

/** a logger whose lines the test can read */
function recordingLogger() {
  const lines: { level: number; msg: string }[] = [];
  const logger = pino({ level: 'info' }, { write: (line: string) => lines.push(JSON.parse(line)) });
  return { lines, logger };
}

describe('notification chain', () => {
  it('ignore filter: named actions and media types are dropped, events without a media type pass', () => {
    const accepts = ignoreFilter({ ignoredmediatypes: ['a/old'], ignore: { mediatypes: ['a/new'], actions: ['pull'] } });
    const event = (action: 'pull' | 'push', mediaType?: string) => ({ action, target: { digest: 'sha256:x', repository: 'r', mediaType } });
    assert.equal(accepts(event('push', 'a/other')), true);
    assert.equal(accepts(event('pull', 'a/other')), false);
    assert.equal(accepts(event('push', 'a/old')), false);
    assert.equal(accepts(event('push', 'a/new')), false);
    assert.equal(accepts(event('push')), true);
  });

  it('retry: immediate below the threshold, then one back-off before each retry; a success resets the count', async () => {
    const clock = new ManualClock();
    const { logger, lines } = recordingLogger();
    const outcomes: Outcome[] = [];
    const retrying = new Retrying({ threshold: 2, backoff: 1000, clock, logger, endpoint: { name: 'e', url: 'http://e' }, onAttempt: (o) => outcomes.push(o) });
    let answers = [500, 500, 500, 500, 200];
    let attempts = 0;
    const attempt = async (): Promise<Outcome> => {
      const status = answers[attempts++];
      return { ok: status < 400, status };
    };
    const stop = new AbortController();
    const delivered = retrying.deliver(attempt, 3, stop.signal);
    await clock.advance(0);
    assert.equal(attempts, 2, 'the first failure is retried at once; the second reaches the threshold');
    await clock.advance(999);
    assert.equal(attempts, 2);
    await clock.advance(1);
    assert.equal(attempts, 3);
    await clock.advance(1000);
    assert.equal(attempts, 4);
    await clock.advance(1000);
    await delivered;
    assert.equal(attempts, 5);
    assert.deepEqual(outcomes.map((o) => ('status' in o ? o.status : 0)), answers);
    assert.equal(lines.filter((l) => l.level === 50).length, 4, 'one error line per failed attempt');
    assert.equal(lines.filter((l) => l.level === 40 && /backing off 1000ms/.test(l.msg)).length, 3);

    answers = [500, 200];
    attempts = 0;
    const again = retrying.deliver(attempt, 1, stop.signal);
    await clock.advance(0);
    await again;
    assert.equal(attempts, 2, 'after a success, the next failure is retried at once');
  });

  it('retry: a dead endpoint is logged in full for 10 failures, then at the 16th, 32nd, 64th..., and once when it delivers again', async () => {
    const clock = new ManualClock();
    const { logger, lines } = recordingLogger();
    const retrying = new Retrying({ threshold: 1, backoff: 10, clock, logger, endpoint: { name: 'e', url: 'http://e' }, onAttempt: () => undefined });
    let attempts = 0;
    const attempt = async (): Promise<Outcome> => ({ ok: ++attempts > 100, status: attempts > 100 ? 200 : 503 });
    const delivered = retrying.deliver(attempt, 1, new AbortController().signal);
    for (let i = 0; i <= 100; i++) await clock.advance(10);
    await delivered;
    assert.equal(attempts, 101);
    const errors = lines.filter((l) => l.level === 50);
    assert.deepEqual(errors.map((l) => (l as unknown as { failures: number }).failures), [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 16, 32, 64]);
    assert.match(errors[9].msg, /10 in a row; from now on logged at the 16th/);
    assert.equal(lines.filter((l) => l.level === 40 && /backing off/.test(l.msg)).length, 13);
    assert.equal(lines.filter((l) => /delivered again after 100 consecutive failures/.test(l.msg)).length, 1);
  });

  it('retry: the stop ends a back-off without another attempt', async () => {
    const clock = new ManualClock();
    const { logger } = recordingLogger();
    const retrying = new Retrying({ threshold: 0, backoff: 60_000, clock, logger, endpoint: { name: 'e', url: 'http://e' }, onAttempt: () => {} });
    let attempts = 0;
    const stop = new AbortController();
    const delivered = retrying.deliver(async () => (attempts++, { ok: false, error: new Error('refused') }), 1, stop.signal);
    await clock.advance(0);
    assert.equal(attempts, 1);
    stop.abort();
    await delivered;
    assert.equal(attempts, 1);
  });

  it('queue: the first item goes in flight at once, the oldest beyond the limit are dropped, drain waits on the clock', async () => {
    const clock = new ManualClock();
    const batches: number[][] = [];
    let release = () => {};
    const drops: number[] = [];
    const queue = new BoundedQueue<number>({
      maxBatch: 2,
      limit: 2,
      clock,
      consume: (batch) => {
        batches.push([...batch]);
        return new Promise<void>((resolve) => (release = resolve));
      },
      onDrop: (n) => drops.push(n),
      onError: (err) => assert.fail(String(err)),
    });
    for (let i = 1; i <= 5; i++) assert.equal(queue.push(i), true);
    assert.deepEqual(batches, [[1]]);
    assert.deepEqual(drops, [1, 1], 'items 2 and 3 were dropped');
    assert.equal(queue.pending, 3);

    const late = queue.drain(500);
    await clock.advance(500);
    assert.equal(await late, false, 'not drained within the grace');

    const drained = queue.drain(500);
    release();
    await clock.advance(0);
    assert.deepEqual(batches, [[1], [4, 5]], 'up to maxBatch in one batch');
    release();
    assert.equal(await drained, true);
    assert.equal(queue.pending, 0);

    await queue.stop();
    assert.equal(queue.push(6), false, 'a stopped queue takes nothing');
  });
});
