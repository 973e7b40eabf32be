/**
 * Delivery to notification endpoints (spec 3.3, 6.3, 6.5, 6.6) against real HTTP listeners on
 * 127.0.0.1: retries, back-off, timeouts, redirects, isolation, headers, queue limits, draining.
 * Timings are milliseconds; every wait is bounded; no duration is asserted as performance.
 */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { after, describe, it } from 'node:test';
import { pino, type Logger } from 'pino';
import { validateConfig } from '../../src/config/load.js';
import { EVENTS_MEDIA_TYPE, type EventInput } from '../../src/notifications/events.js';
import { Notifier } from '../../src/notifications/notifier.js';
import type { Clock } from '../../src/scheduler/clock.js';
import { ManualClock } from '../helpers/manual-clock.js';
import { freePort } from '../helpers/ports.js';
import { eventually, startReceiver, type Receiver } from '../helpers/receiver.js';

/** a logger whose lines the test can read */
function captureLogger(): { logger: Logger; lines: Record<string, unknown>[] } {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _e, done) {
      for (const line of chunk.toString().split('\n')) if (line) lines.push(JSON.parse(line));
      done();
    },
  });
  return { logger: pino({ level: 'info' }, sink), lines };
}

function notifierFor(endpoints: Record<string, unknown>[], logger: Logger, events: Record<string, unknown> = {}, clock?: Clock): Notifier {
  const config = validateConfig({ version: '0.1', storage: { inmemory: {} }, notifications: { endpoints, events } }, 'test');
  return new Notifier(config.notifications, logger, { clock });
}

let serial = 0;
function sampleEvent(action: EventInput['action'] = 'push', mediaType = 'application/octet-stream'): EventInput {
  serial++;
  return {
    action,
    target: { mediaType, digest: `sha256:${serial.toString(16).padStart(64, '0')}`, size: serial, length: serial, repository: 'test/repo', url: `http://registry.test/v2/test/repo/blobs/${serial}` },
    request: { id: `req-${serial}`, addr: '127.0.0.1:1234', host: 'registry.test', method: 'PUT', useragent: 'test' },
    actor: {},
  };
}

const digestsOf = (events: Record<string, unknown>[]) => events.map((e) => (e.target as { digest: string }).digest);

describe('notification delivery', () => {
  const cleanup: (() => Promise<void>)[] = [];
  after(async () => {
    for (const c of cleanup.reverse()) await c();
  });
  async function receiver(respond?: Parameters<typeof startReceiver>[0]): Promise<Receiver> {
    const r = await startReceiver(respond);
    cleanup.push(() => r.close());
    return r;
  }
  function track(n: Notifier): Notifier {
    cleanup.push(() => n.close(0));
    return n;
  }

  it('an endpoint that fails N times then recovers gets every event once; the metrics count the failures', async () => {
    const rx = await receiver((n) => ({ status: n < 3 ? 500 : 200 }));
    const { logger, lines } = captureLogger();
    const notifier = track(notifierFor([{ name: 'flaky', url: `${rx.url}/hook`, threshold: 2, backoff: '20ms', timeout: '2s' }], logger));
    const event = sampleEvent();
    notifier.emit(event);
    await rx.waitFor(() => rx.delivered().length >= 1, 5000, 'the delivery after three failures');
    const more = [sampleEvent(), sampleEvent()];
    for (const e of more) notifier.emit(e);
    await rx.waitFor(() => rx.delivered().length >= 3, 5000, 'the later events');
    await eventually(() => notifier.snapshot()[0].Metrics.Pending === 0, 2000, 'an empty queue');

    const delivered = digestsOf(rx.delivered());
    assert.deepEqual(delivered.sort(), [event, ...more].map((e) => e.target.digest).sort(), 'each event delivered exactly once');
    assert.equal(rx.requests.filter((r) => r.status === 500).length, 3);
    const m = notifier.snapshot()[0].Metrics;
    assert.equal(m.Events, 3);
    assert.equal(m.Successes, 3);
    assert.equal(m.Failures, 3);
    assert.equal(m.Errors, 0);
    assert.equal(m.Pending, 0);
    assert.equal(m.Statuses['500 Internal Server Error'], 3);
    // statuses count events, as Distribution's do: the two later events may share one envelope
    assert.equal(m.Statuses['200 OK'], 3);

    const errors = lines.filter((l) => l.level === 50);
    assert.equal(errors.length, 3, 'one error line per failed attempt');
    assert.ok(errors.every((l) => l.endpoint === 'flaky' && /500 Internal Server Error/.test(String(l.err))), JSON.stringify(errors[0]));
    const warnings = lines.filter((l) => l.level === 40 && /backing off/.test(String(l.msg)));
    assert.ok(warnings.length >= 1, 'a back-off warning after the threshold');
    assert.equal(warnings[0].endpoint, 'flaky');
  });

  it('a slow endpoint hits the timeout, counts an error, and gets the event on a later try', async () => {
    const rx = await receiver((n) => ({ delayMs: n === 0 ? 2000 : 0 }));
    const { logger, lines } = captureLogger();
    const notifier = track(notifierFor([{ name: 'slow', url: rx.url, timeout: '300ms', threshold: 5, backoff: '10ms' }], logger));
    const event = sampleEvent();
    notifier.emit(event);
    await eventually(() => notifier.snapshot()[0].Metrics.Successes === 1, 5000, 'the retried delivery');
    const m = notifier.snapshot()[0].Metrics;
    assert.ok(m.Errors >= 1, 'the timed-out attempt counts as an error');
    assert.equal(m.Failures, 0);
    assert.ok(digestsOf(rx.delivered()).includes(event.target.digest));
    assert.ok(lines.some((l) => l.level === 50 && l.endpoint === 'slow' && /timeout after 300ms/.test(String(l.err))), 'the error names the timeout');
  });

  it('a redirect followed to a 2xx counts as delivered; 307 repeats the POST', async () => {
    const rx = await receiver((_n, req) => (req.path === '/old' ? { status: 307, location: '/new' } : req.path === '/moved' ? { status: 302, location: '/landing' } : { status: 200 }));
    const { logger } = captureLogger();
    const notifier = track(
      notifierFor(
        [
          { name: 'r307', url: `${rx.url}/old`, timeout: '2s' },
          { name: 'r302', url: `${rx.url}/moved`, timeout: '2s' },
        ],
        logger,
      ),
    );
    notifier.emit(sampleEvent());
    await eventually(() => notifier.snapshot().every((e) => e.Metrics.Successes === 1), 5000, 'both deliveries');
    const [r307, r302] = notifier.snapshot();
    assert.deepEqual(r307.Metrics.Statuses, { '200 OK': 1 });
    assert.equal(r307.Metrics.Failures + r307.Metrics.Errors, 0);
    assert.deepEqual(r302.Metrics.Statuses, { '200 OK': 1 });
    const atNew = rx.requests.find((r) => r.path === '/new')!;
    assert.equal(atNew.method, 'POST');
    assert.equal(JSON.parse(atNew.body).events.length, 1);
    // as Go's client does, a 302 turns the POST into a GET: still a 2xx after the redirect
    assert.equal(rx.requests.find((r) => r.path === '/landing')!.method, 'GET');
  });

  it('a 3xx answer without a Location counts as delivered', async () => {
    const rx = await receiver(() => ({ status: 304 }));
    const { logger } = captureLogger();
    const notifier = track(notifierFor([{ name: 'not-modified', url: rx.url }], logger));
    notifier.emit(sampleEvent());
    await eventually(() => notifier.snapshot()[0].Metrics.Successes === 1, 5000, 'the delivery');
    assert.deepEqual(notifier.snapshot()[0].Metrics.Statuses, { '304 Not Modified': 1 });
  });

  it('two endpoints stay isolated: one down and one hanging do not delay the third', async () => {
    const good = await receiver();
    const hanging = await receiver(() => ({ hang: true }));
    const deadPort = await freePort(); // nothing listens there
    const { logger } = captureLogger();
    const notifier = track(
      notifierFor(
        [
          { name: 'down', url: `http://127.0.0.1:${deadPort}/`, threshold: 1, backoff: '50ms', timeout: '200ms' },
          { name: 'hanging', url: hanging.url, timeout: '10s' },
          { name: 'good', url: good.url },
        ],
        logger,
      ),
    );
    const events = Array.from({ length: 5 }, () => sampleEvent());
    for (const e of events) notifier.emit(e);
    await good.waitFor(() => good.delivered().length === 5, 3000, 'all events at the good endpoint');
    await eventually(() => notifier.snapshot()[2].Metrics.Successes === 5, 2000, 'the good endpoint to count its successes');
    const [down, hang, ok] = notifier.snapshot();
    assert.deepEqual(digestsOf(good.delivered()).sort(), events.map((e) => e.target.digest).sort());
    assert.equal(ok.Metrics.Pending, 0);
    assert.equal(down.Metrics.Pending, 5);
    assert.equal(down.Metrics.Successes, 0);
    await eventually(() => notifier.snapshot()[0].Metrics.Errors >= 5, 3000, 'connection errors counted per event');
    assert.equal(hang.Metrics.Pending, 5);
    assert.equal(hang.Metrics.Successes, 0);
  });

  it('sends the configured headers and the envelope media type; the body is {"events": [...]}', async () => {
    const rx = await receiver();
    const { logger, lines } = captureLogger();
    const notifier = track(notifierFor([{ name: 'h', url: rx.url, headers: { Authorization: ['Bearer s3cret'], 'X-Many': ['one', 'two'] }, timeout: '2s' }], logger));
    const event = sampleEvent();
    notifier.emit(event);
    await rx.waitFor(() => rx.delivered().length === 1, 5000, 'the delivery');
    const req = rx.requests[0];
    assert.equal(req.method, 'POST');
    assert.equal(req.headers['content-type'], EVENTS_MEDIA_TYPE);
    assert.equal(req.headers.authorization, 'Bearer s3cret');
    const many: string[] = [];
    for (let i = 0; i < req.rawHeaders.length; i += 2) if (req.rawHeaders[i].toLowerCase() === 'x-many') many.push(req.rawHeaders[i + 1]);
    assert.deepEqual(many, ['one', 'two']);
    const body = JSON.parse(req.body);
    assert.deepEqual(Object.keys(body), ['events']);
    assert.equal(body.events[0].target.digest, event.target.digest);

    // start-up line: endpoint, url, timeout and headers, values masked
    const startup = lines.find((l) => l.endpoint === 'h' && /configured notification endpoint/.test(String(l.msg)))!;
    assert.ok(startup, 'one info line per endpoint at start-up');
    assert.equal(startup.level, 30);
    assert.equal(startup.url, rx.url);
    assert.equal(startup.timeout, '2000ms');
    assert.deepEqual(startup.headers, { Authorization: ['********'], 'X-Many': ['********', '********'] });
    assert.ok(!JSON.stringify(lines).includes('s3cret'), 'no header value in the logs');
    assert.deepEqual(notifier.snapshot()[0].Headers, { Authorization: ['********'], 'X-Many': ['********', '********'] });
  });

  it('ignore rules drop the actions and media types they name, per endpoint', async () => {
    const rx = await receiver();
    const { logger } = captureLogger();
    const notifier = track(
      notifierFor(
        [
          { name: 'no-pulls', url: `${rx.url}/a`, ignore: { actions: ['pull'] } },
          { name: 'no-blobs', url: `${rx.url}/b`, ignoredmediatypes: ['application/octet-stream'] },
          { name: 'no-oci', url: `${rx.url}/c`, ignore: { mediatypes: ['application/vnd.oci.image.manifest.v1+json'] } },
          { name: 'off', url: `${rx.url}/d`, disabled: true },
        ],
        logger,
      ),
    );
    assert.deepEqual(notifier.snapshot().map((e) => e.name), ['no-pulls', 'no-blobs', 'no-oci'], 'a disabled endpoint is not set up');
    const blobPull = sampleEvent('pull');
    const blobPush = sampleEvent('push');
    const ociPush = sampleEvent('push', 'application/vnd.oci.image.manifest.v1+json');
    const del: EventInput = { ...sampleEvent('delete'), target: { digest: 'sha256:' + 'd'.repeat(64), repository: 'test/repo' } };
    for (const e of [blobPull, blobPush, ociPush, del]) notifier.emit(e);
    await eventually(() => notifier.snapshot().every((e) => e.Metrics.Pending === 0 && e.Metrics.Events > 0), 5000, 'all queues empty');
    const at = (path: string) => digestsOf(rx.requests.filter((r) => r.path === path).flatMap((r) => JSON.parse(r.body).events)).sort();
    assert.deepEqual(at('/a'), [blobPush, ociPush, del].map((e) => e.target.digest).sort());
    assert.deepEqual(at('/b'), [ociPush, del].map((e) => e.target.digest).sort());
    assert.deepEqual(at('/c'), [blobPull, blobPush, del].map((e) => e.target.digest).sort());
    assert.equal(at('/d').length, 0);
  });

  it('queuelimit drops the oldest events beyond it, counting and logging the drops', async () => {
    const deadPort = await freePort();
    const { logger, lines } = captureLogger();
    const notifier = track(notifierFor([{ name: 'bounded', url: `http://127.0.0.1:${deadPort}/`, queuelimit: 2, threshold: 1, backoff: '1s', timeout: '200ms' }], logger));
    for (let i = 0; i < 6; i++) notifier.emit(sampleEvent());
    const m = notifier.snapshot()[0].Metrics;
    // the first event is already in flight; the queue behind it holds at most 2
    assert.equal(m.Events, 6);
    assert.equal(m.Dropped, 3);
    assert.equal(m.Pending, 3);
    const drop = lines.find((l) => l.level === 40 && l.endpoint === 'bounded' && /dropped/.test(String(l.msg)));
    assert.ok(drop, 'a warning names the endpoint and the drops');
  });

  it('on close, queued events get the drain time to be delivered; what is left is reported', async () => {
    const rx = await receiver((n) => ({ status: n < 2 ? 503 : 200 }));
    const deadPort = await freePort();
    const { logger, lines } = captureLogger();
    // back-off and the drain grace run on this clock: the test advances it instead of waiting
    const clock = new ManualClock();
    const notifier = notifierFor(
      [
        { name: 'recovering', url: rx.url, threshold: 1, backoff: '30ms' },
        { name: 'dead', url: `http://127.0.0.1:${deadPort}/`, threshold: 1, backoff: '30ms', timeout: '100ms' },
      ],
      logger,
      {},
      clock,
    );
    const events = [sampleEvent(), sampleEvent(), sampleEvent()];
    for (const e of events) notifier.emit(e);
    let closed = false;
    const closing = notifier.close(1000).then(() => (closed = true));
    // each back-off of the recovering endpoint is let through as it begins (30 ms of the grace each)
    const backingOff = () => lines.filter((l) => l.endpoint === 'recovering' && /backing off/.test(String(l.msg))).length;
    let advanced = 0;
    while (rx.delivered().length < events.length) {
      await eventually(() => rx.delivered().length === events.length || backingOff() > advanced, 5000, 'a delivery or a back-off');
      if (backingOff() > advanced) {
        advanced++;
        await clock.advance(30);
      }
    }
    assert.ok(!closed, 'delivered within the grace');
    // the dead endpoint never drains: close() gives up when the grace is over
    await clock.advance(1000);
    await closing;
    assert.deepEqual(digestsOf(rx.delivered()).sort(), events.map((e) => e.target.digest).sort());
    const lost = lines.find((l) => l.endpoint === 'dead' && /not delivered within the drain timeout/.test(String(l.msg)));
    assert.ok(lost, 'the dead endpoint reports its lost events');
    assert.equal(lost.lost, 3);
    // a closed notifier accepts nothing more
    notifier.emit(sampleEvent());
    assert.equal(notifier.snapshot()[0].Metrics.Events, 3);
  });
});
