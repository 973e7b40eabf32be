/**
 * The broadcaster: stamps what the edge reports (id, timestamp, source) and hands a copy to every
 * endpoint whose ignore rules let it through. Fed by the core, never calls back into it.
 */
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from 'pino';
import { systemClock, type Clock } from '../scheduler/clock.js';
import { Endpoint } from './endpoint.js';
import type { Event, EventInput, EventSink, SourceRecord } from './events.js';
import { maskHeaders } from '../mask.js';
import type { EndpointMetrics } from './metrics.js';
import type { NotificationsOptions } from './options.js';

/** what /debug/vars shows of an endpoint (spec 6.6) */
export interface EndpointSnapshot {
  name: string;
  url: string;
  Headers: Record<string, string[]> | null;
  /** nanoseconds */
  Timeout: number;
  /** nanoseconds */
  Backoff: number;
  Threshold: number;
  QueueLimit?: number;
  Metrics: EndpointMetrics;
}

export class Notifier implements EventSink {
  readonly endpoints: Endpoint[];
  readonly includeReferences: boolean;
  private readonly source: SourceRecord;

  /** `clock` times back-off, drain grace and drop warnings */
  constructor(
    config: NotificationsOptions,
    private readonly logger: Logger,
    options: { instanceID?: string; clock?: Clock } = {},
  ) {
    this.includeReferences = config.events.includereferences;
    this.source = { addr: hostname(), instanceID: options.instanceID ?? randomUUID() };
    this.endpoints = [];
    for (const e of config.endpoints) {
      if (e.disabled) {
        logger.info({ endpoint: e.name, url: e.url }, `notification endpoint ${e.name} is disabled, skipping it`);
        continue;
      }
      this.endpoints.push(new Endpoint(e, logger.child({ component: 'notifications' }), options.clock ?? systemClock));
      logger.info(
        { endpoint: e.name, url: e.url, timeout: `${e.timeout}ms`, threshold: e.threshold, backoff: `${e.backoff}ms`, headers: maskHeaders(e.headers), queuelimit: e.queuelimit },
        `configured notification endpoint ${e.name} (${e.url}), timeout=${e.timeout}ms, headers=${JSON.stringify(maskHeaders(e.headers))}`,
      );
    }
  }

  get active(): boolean {
    return this.endpoints.length > 0;
  }

  /** the listener's address once known: source.addr becomes this host's name and the bound port */
  setListenPort(port: number): void {
    this.source.addr = `${hostname()}:${port}`;
  }

  emit(input: EventInput): void {
    try {
      const targets = this.endpoints.filter((e) => e.accepts(input));
      if (targets.length === 0) return;
      const event: Event = {
        id: randomUUID(),
        timestamp: new Date().toISOString(),
        action: input.action,
        target: input.target,
        request: input.request,
        actor: input.actor,
        source: { ...this.source },
      };
      for (const endpoint of targets) endpoint.enqueue(event);
    } catch (err) {
      // an event is never worth failing a request for
      this.logger.error({ err }, 'could not queue a notification event');
    }
  }

  snapshot(): EndpointSnapshot[] {
    return this.endpoints.map((e) => {
      const c = e.config;
      return {
        name: c.name,
        url: c.url,
        Headers: Object.keys(c.headers).length > 0 ? maskHeaders(c.headers) : null,
        Timeout: Math.round(c.timeout * 1e6),
        Backoff: Math.round(c.backoff * 1e6),
        Threshold: c.threshold,
        ...(c.queuelimit !== undefined ? { QueueLimit: c.queuelimit } : {}),
        Metrics: e.metrics(),
      };
    });
  }

  /**
   * Shutdown: waits up to `ms` for every queue to empty, then stops the senders. Events still
   * queued are lost (spec 6.5: queues are in memory) and counted in a warning.
   */
  async close(ms: number): Promise<void> {
    const drained = await Promise.all(this.endpoints.map((e) => e.drain(ms)));
    drained.forEach((ok, i) => {
      if (ok) return;
      const e = this.endpoints[i];
      this.logger.warn(
        { endpoint: e.config.name, url: e.config.url, lost: e.metrics().Pending },
        `notification endpoint ${e.config.name}: ${e.metrics().Pending} events not delivered within the drain timeout are dropped`,
      );
    });
    await Promise.all(this.endpoints.map((e) => e.stop()));
  }
}
