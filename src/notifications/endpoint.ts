/**
 * One notification endpoint: its own in-memory queue, a single sender loop (one request at a time),
 * retry state and HTTP client (its own keep-alive agent). Nothing here is awaited by a registry
 * request, and nothing one endpoint does can delay another.
 *
 * Delivery (spec 3.3, 6.5): a 2xx or 3xx answer (after following redirects) delivers the envelope;
 * anything else, or a transport error or timeout, keeps it queued and retries it. Before
 * `threshold` consecutive failures the retry is immediate; from then on each retry waits `backoff`
 * (as Distribution's retrying sink does). A success resets the count.
 */
import { Agent as HttpAgent, request as httpRequest, STATUS_CODES, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import type { Logger } from 'pino';
import { EVENTS_MEDIA_TYPE, type Event, type EventAction } from './events.js';

export interface EndpointConfig {
  name: string;
  url: string;
  headers: Record<string, string[]>;
  /** milliseconds */
  timeout: number;
  threshold: number;
  /** milliseconds */
  backoff: number;
  ignoredmediatypes: string[];
  ignore: { mediatypes: string[]; actions: EventAction[] };
  queuelimit?: number;
}

/** the counters of spec 6.6 (plus Dropped, for queuelimit) */
export interface EndpointMetrics {
  Pending: number;
  Events: number;
  Successes: number;
  Failures: number;
  Errors: number;
  Statuses: Record<string, number>;
  Dropped: number;
}

/** the most events sent in one envelope */
export const MAX_BATCH = 100;
/** the most redirects followed for one delivery (Go's http.Client stops after 10 as well) */
const MAX_REDIRECTS = 10;

type Outcome = { ok: true; status: number } | { ok: false; status: number } | { ok: false; error: Error };

export class Endpoint {
  private readonly queue: Event[] = [];
  private inflight: Event[] = [];
  private readonly counts = { Events: 0, Successes: 0, Failures: 0, Errors: 0, Dropped: 0 };
  private readonly statuses = new Map<string, number>();
  private consecutiveFailures = 0;
  private readonly agent: HttpAgent;
  private wake?: () => void;
  private idleWaiters: (() => void)[] = [];
  private readonly stopper = new AbortController();
  private running?: Promise<void>;
  private lastDropLog = 0;
  private droppedSinceLog = 0;

  constructor(
    readonly config: EndpointConfig,
    private readonly logger: Logger,
  ) {
    const options = { keepAlive: true, maxSockets: 1 };
    this.agent = config.url.startsWith('https:') ? new HttpsAgent(options) : new HttpAgent(options);
  }

  /** whether this endpoint wants the event (ignore rules of spec 6.1 / Distribution) */
  accepts(event: Pick<Event, 'action' | 'target'>): boolean {
    const { ignore, ignoredmediatypes } = this.config;
    if (ignore.actions.includes(event.action)) return false;
    const type = event.target.mediaType;
    return type === undefined || !(ignoredmediatypes.includes(type) || ignore.mediatypes.includes(type));
  }

  enqueue(event: Event): void {
    if (this.stopper.signal.aborted) return;
    this.queue.push(event);
    this.counts.Events++;
    const limit = this.config.queuelimit;
    if (limit !== undefined && this.queue.length > limit) {
      const dropped = this.queue.splice(0, this.queue.length - limit).length;
      this.counts.Dropped += dropped;
      this.logDrops(dropped);
    }
    this.running ??= this.run();
    this.wake?.();
  }

  metrics(): EndpointMetrics {
    return {
      Pending: this.queue.length + this.inflight.length,
      ...this.counts,
      Statuses: Object.fromEntries(this.statuses),
    };
  }

  /** resolves when nothing is queued or in flight, or after `ms` (then false) */
  async drain(ms: number): Promise<boolean> {
    if (this.queue.length + this.inflight.length === 0) return true;
    let timer: NodeJS.Timeout | undefined;
    const idle = new Promise<boolean>((resolve) => this.idleWaiters.push(() => resolve(true)));
    const late = new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms)));
    try {
      return await Promise.race([idle, late]);
    } finally {
      clearTimeout(timer);
    }
  }

  /** stops the sender (aborting a request or back-off in progress) and releases the HTTP client */
  async stop(): Promise<void> {
    this.stopper.abort();
    this.wake?.();
    await this.running;
    this.agent.destroy();
  }

  private async run(): Promise<void> {
    try {
      await this.loop();
    } catch (err) {
      // unreachable by design (delivery errors are outcomes); never let the sender die silently
      this.logger.error({ err, endpoint: this.config.name }, `notification endpoint ${this.config.name}: sender stopped by an unexpected error`);
      this.queue.unshift(...this.inflight);
      this.inflight = [];
      this.running = undefined; // the next event starts a new sender
    }
  }

  private async loop(): Promise<void> {
    const { signal } = this.stopper;
    while (!signal.aborted) {
      if (this.queue.length === 0) {
        for (const waiter of this.idleWaiters.splice(0)) waiter();
        await new Promise<void>((resolve) => (this.wake = resolve));
        this.wake = undefined;
        continue;
      }
      this.inflight = this.queue.splice(0, MAX_BATCH);
      await this.deliver(this.inflight);
      this.inflight = [];
    }
    for (const waiter of this.idleWaiters.splice(0)) waiter();
  }

  /** sends one envelope until it is delivered or the endpoint stops */
  private async deliver(events: Event[]): Promise<void> {
    const body = Buffer.from(JSON.stringify({ events }));
    const { signal } = this.stopper;
    while (!signal.aborted) {
      if (this.consecutiveFailures > 0 && this.consecutiveFailures >= this.config.threshold) {
        this.logger.warn(
          { endpoint: this.config.name, url: this.config.url, failures: this.consecutiveFailures, backoff: `${this.config.backoff}ms` },
          `notification endpoint ${this.config.name}: ${this.consecutiveFailures} consecutive failures, backing off ${this.config.backoff}ms before retrying`,
        );
        await sleep(this.config.backoff, signal);
        if (signal.aborted) return;
      }
      const outcome = await this.post(body, signal);
      if ('status' in outcome) this.countStatus(outcome.status, events.length);
      if (outcome.ok) {
        this.counts.Successes += events.length;
        this.consecutiveFailures = 0;
        return;
      }
      if (signal.aborted) return;
      this.consecutiveFailures++;
      let reason: string;
      if ('error' in outcome) {
        this.counts.Errors += events.length;
        reason = outcome.error.message;
      } else {
        this.counts.Failures += events.length;
        reason = `response status ${statusText(outcome.status)} unaccepted`;
      }
      this.logger.error(
        { endpoint: this.config.name, url: this.config.url, events: events.length, err: reason },
        `notification endpoint ${this.config.name}: error posting events to ${this.config.url}: ${reason}; retrying`,
      );
    }
  }

  private countStatus(status: number, n: number): void {
    const key = statusText(status);
    this.statuses.set(key, (this.statuses.get(key) ?? 0) + n);
  }

  /** one delivery attempt, redirects included, bounded by `timeout` */
  private async post(body: Buffer, stop: AbortSignal): Promise<Outcome> {
    const attempt = new AbortController();
    const onStop = () => attempt.abort(new Error('endpoint stopped'));
    stop.addEventListener('abort', onStop);
    const timer = setTimeout(() => attempt.abort(new Error(`timeout after ${this.config.timeout}ms`)), this.config.timeout);
    try {
      let url = new URL(this.config.url);
      let method = 'POST';
      let payload: Buffer | undefined = body;
      for (let hop = 0; ; hop++) {
        const res = await this.send(url, method, payload, attempt.signal);
        res.resume(); // the answer's body is not needed
        const status = res.statusCode ?? 0;
        const location = res.headers.location;
        if (status >= 300 && status < 400 && location && status !== 304) {
          if (hop >= MAX_REDIRECTS) return { ok: false, error: new Error(`stopped after ${MAX_REDIRECTS} redirects`) };
          url = new URL(location, url);
          // as Go's http.Client: 307 and 308 repeat the POST, the others become a GET without body
          if (status !== 307 && status !== 308) {
            method = 'GET';
            payload = undefined;
          }
          continue;
        }
        await finished(res);
        return status >= 200 && status < 400 ? { ok: true, status } : { ok: false, status };
      }
    } catch (err) {
      const reason = attempt.signal.aborted && attempt.signal.reason instanceof Error ? attempt.signal.reason : (err as Error);
      return { ok: false, error: reason };
    } finally {
      clearTimeout(timer);
      stop.removeEventListener('abort', onStop);
    }
  }

  private send(url: URL, method: string, body: Buffer | undefined, signal: AbortSignal): Promise<IncomingMessage> {
    const headers: Record<string, string | string[]> = {};
    for (const [name, values] of Object.entries(this.config.headers)) headers[name] = values;
    headers['user-agent'] ??= 'berth-notifications';
    if (body) {
      headers['content-type'] = EVENTS_MEDIA_TYPE;
      headers['content-length'] = String(body.length);
    }
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    // the endpoint's own agent only for its own origin; a redirect elsewhere gets a one-off connection
    const sameOrigin = url.origin === new URL(this.config.url).origin;
    return new Promise((resolve, reject) => {
      const req = send(url, { method, headers, signal, agent: sameOrigin ? this.agent : undefined }, (res) => {
        res.on('error', () => undefined); // an abort mid-answer is reported through `signal`, never as an unhandled error
        resolve(res);
      });
      req.on('error', reject);
      req.end(body);
    });
  }

  private logDrops(dropped: number): void {
    this.droppedSinceLog += dropped;
    const now = Date.now();
    if (now - this.lastDropLog < 1000) return; // one line per second at most
    this.logger.warn(
      { endpoint: this.config.name, url: this.config.url, dropped: this.droppedSinceLog, queuelimit: this.config.queuelimit, droppedTotal: this.counts.Dropped },
      `notification endpoint ${this.config.name}: queue over its limit of ${this.config.queuelimit}, dropped the ${this.droppedSinceLog} oldest events`,
    );
    this.lastDropLog = now;
    this.droppedSinceLog = 0;
  }
}

/** "500 Internal Server Error", as Distribution's metrics name statuses */
export function statusText(status: number): string {
  return `${status} ${STATUS_CODES[status] ?? ''}`.trim();
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done);
  });
}

function finished(res: IncomingMessage): Promise<void> {
  return new Promise((resolve, reject) => {
    if (res.complete) return resolve();
    res.once('end', resolve);
    res.once('close', resolve);
    res.once('error', reject);
  });
}
