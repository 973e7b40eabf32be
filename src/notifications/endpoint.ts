/**
 * One notification endpoint: a chain of small parts, as Distribution's sinks are, in the order an
 * event passes them:
 *
 *   ignore filter (ignore.ts) -> bounded queue (queue.ts) -> retry with threshold and back-off
 *   (retry.ts) -> HTTP sender (http-sender.ts)
 *
 * The body is Distribution's envelope, or with `format: cloudevents` one CloudEvent (cloudevents.ts).
 *
 * Each endpoint has its own queue, consumer and HTTP client: nothing here is awaited by a registry
 * request, and nothing one endpoint does can delay another. The counters (metrics.ts) watch the
 * queue and every attempt.
 */
import type { Logger } from 'pino';
import type { Clock } from '../scheduler/clock.js';
import { CLOUDEVENTS_MEDIA_TYPE, toCloudEvent } from './cloudevents.js';
import type { Event } from './events.js';
import { HttpSender } from './http-sender.js';
import { ignoreFilter, type EventFilter } from './ignore.js';
import { EndpointCounters, type EndpointMetrics } from './metrics.js';
import type { EndpointOptions } from './options.js';
import { BoundedQueue } from './queue.js';
import { Retrying } from './retry.js';

/** the most events sent in one envelope */
export const MAX_BATCH = 100;
/** at most one drop warning per this many milliseconds */
const DROP_LOG_EVERY_MS = 1000;

export class Endpoint {
  /** whether this endpoint wants the event */
  readonly accepts: EventFilter;
  private readonly counters = new EndpointCounters();
  private readonly queue: BoundedQueue<Event>;
  private readonly sender: HttpSender;
  private lastDropLog = -Infinity;
  private droppedSinceLog = 0;

  constructor(
    readonly config: EndpointOptions,
    private readonly logger: Logger,
    private readonly clock: Clock,
  ) {
    const endpoint = { name: config.name, url: config.url };
    this.accepts = ignoreFilter(config);
    const cloudEvents = config.format === 'cloudevents';
    this.sender = cloudEvents ? new HttpSender(config, CLOUDEVENTS_MEDIA_TYPE) : new HttpSender(config);
    const retrying = new Retrying({
      threshold: config.threshold,
      backoff: config.backoff,
      clock,
      logger,
      endpoint,
      onAttempt: (outcome, events) => this.counters.attempt(outcome, events),
    });
    this.queue = new BoundedQueue<Event>({
      // a structured CloudEvent is one event per request
      maxBatch: cloudEvents ? 1 : MAX_BATCH,
      limit: config.queuelimit,
      clock,
      consume: (events, signal) => {
        const body = Buffer.from(JSON.stringify(cloudEvents ? toCloudEvent(events[0]) : { events }));
        return retrying.deliver((attempt) => this.sender.post(body, attempt), events.length, signal);
      },
      onDrop: (count) => this.dropped(count),
      onError: (err) => logger.error({ err, ...endpoint }, `notification endpoint ${config.name}: sender stopped by an unexpected error`),
    });
  }

  enqueue(event: Event): void {
    if (this.queue.push(event)) this.counters.queued();
  }

  metrics(): EndpointMetrics {
    return this.counters.snapshot(this.queue.pending);
  }

  /** resolves when nothing is queued or in flight, or after `ms` (then false) */
  drain(ms: number): Promise<boolean> {
    return this.queue.drain(ms);
  }

  /** stops the sender (aborting a request or back-off in progress) and releases the HTTP client */
  async stop(): Promise<void> {
    await this.queue.stop();
    this.sender.close();
  }

  private dropped(count: number): void {
    this.counters.dropped(count);
    this.droppedSinceLog += count;
    const now = this.clock.now();
    if (now - this.lastDropLog < DROP_LOG_EVERY_MS) return;
    const { name, url, queuelimit } = this.config;
    this.logger.warn(
      { endpoint: name, url, dropped: this.droppedSinceLog, queuelimit, droppedTotal: this.counters.droppedTotal },
      `notification endpoint ${name}: queue over its limit of ${queuelimit}, dropped the ${this.droppedSinceLog} oldest events`,
    );
    this.lastDropLog = now;
    this.droppedSinceLog = 0;
  }
}
