/**
 * Prometheus metrics (http.debug.prometheus): requests by method, route kind and status, bytes in
 * and out, storage operation timings, and the notification counters of every endpoint; beside
 * them, Distribution's families from the same observations (distribution-metrics.ts). One
 * prom-client Registry per app, so several apps in one process (tests) do not collide.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Notifier } from '../notifications/notifier.js';
import { DistributionMetrics, type CacheCounts } from './distribution-metrics.js';

const NS = 'berth';

export class Metrics {
  readonly registry = new Registry();
  private readonly requests: Counter<'method' | 'route' | 'code'>;
  private readonly latency: Histogram<'method' | 'route' | 'code'>;
  private readonly bytesIn: Counter<'method' | 'route'>;
  private readonly bytesOut: Counter<'method' | 'route'>;
  private readonly storage: Histogram<'driver' | 'operation' | 'outcome'>;
  private readonly distribution = new DistributionMetrics(this.registry);

  constructor() {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry, prefix: `${NS}_` });
    this.requests = new Counter({ name: `${NS}_http_requests_total`, help: 'HTTP requests answered, by method, route kind and status', labelNames: ['method', 'route', 'code'], registers });
    this.latency = new Histogram({
      name: `${NS}_http_request_duration_seconds`,
      help: 'time from request to the end of the response, by method, route kind and status',
      labelNames: ['method', 'route', 'code'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60],
      registers,
    });
    this.bytesIn = new Counter({ name: `${NS}_http_in_bytes_total`, help: 'request bytes received on the wire (request line, headers and body)', labelNames: ['method', 'route'], registers });
    this.bytesOut = new Counter({ name: `${NS}_http_out_bytes_total`, help: 'response bytes sent on the wire (status line, headers and body)', labelNames: ['method', 'route'], registers });
    this.storage = new Histogram({
      name: `${NS}_storage_operation_duration_seconds`,
      help: 'storage driver calls, by driver, operation and outcome (ok, notfound, error); streams are timed until opened',
      labelNames: ['driver', 'operation', 'outcome'],
      buckets: [0.0005, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10],
      registers,
    });
  }

  observeRequest(method: string, route: string, status: number, seconds: number, bytesIn: number, bytesOut: number): void {
    const labels = { method, route, code: String(status) };
    this.requests.inc(labels);
    this.latency.observe(labels, seconds);
    if (bytesIn > 0) this.bytesIn.inc({ method, route }, bytesIn);
    if (bytesOut > 0) this.bytesOut.inc({ method, route }, bytesOut);
    this.distribution.observeRequest(method, route, status, seconds, bytesIn, bytesOut);
  }

  requestStarted(route: string): () => void {
    return this.distribution.requestStarted(route);
  }

  observeStorage(driver: string, operation: string, outcome: 'ok' | 'notfound' | 'error', seconds: number): void {
    this.storage.observe({ driver, operation, outcome }, seconds);
    this.distribution.observeStorage(driver, operation, seconds);
  }

  /** the metadata cache's counts (Distribution's registry_storage_cache_*) */
  watchCache(counts: Readonly<CacheCounts>): void {
    this.distribution.watchCache(counts);
  }

  /** each feature figure as a gauge berth_<section>_<name in snake case>, read at each scrape */
  watchFigures(figures: () => Record<string, Record<string, number>>): void {
    if (figures().proxy) this.distribution.watchProxy(() => figures().proxy);
    for (const [section, values] of Object.entries(figures())) {
      for (const key of Object.keys(values)) {
        const name = `${NS}_${section}_${key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)}`;
        new Gauge({
          name,
          help: `${section}: ${key} (as in /debug/vars)`,
          registers: [this.registry],
          collect() {
            this.set(figures()[section]?.[key] ?? 0);
          },
        });
      }
    }
  }

  /** the counters of /debug/vars as metrics, read from the endpoints at each scrape */
  watchNotifications(notifier: Notifier): void {
    this.distribution.watchNotifications(notifier);
    const registers = [this.registry];
    const counter = (name: string, help: string, pick: (m: ReturnType<Notifier['snapshot']>[number]['Metrics']) => number) =>
      new Counter({
        name: `${NS}_notifications_${name}_total`,
        help,
        labelNames: ['endpoint'],
        registers,
        collect() {
          this.reset();
          for (const e of notifier.snapshot()) this.inc({ endpoint: e.name }, pick(e.Metrics));
        },
      });
    counter('events', 'events queued for the endpoint', (m) => m.Events);
    counter('successes', 'events delivered (2xx or 3xx)', (m) => m.Successes);
    counter('failures', 'event deliveries answered with another status (each attempt counts)', (m) => m.Failures);
    counter('errors', 'event deliveries that failed in transport or timed out (each attempt counts)', (m) => m.Errors);
    counter('dropped', 'events dropped because the queue was over its queuelimit', (m) => m.Dropped);
    new Gauge({
      name: `${NS}_notifications_pending`,
      help: 'events queued or in flight for the endpoint',
      labelNames: ['endpoint'],
      registers,
      collect() {
        this.reset();
        for (const e of notifier.snapshot()) this.set({ endpoint: e.name }, e.Metrics.Pending);
      },
    });
    new Counter({
      name: `${NS}_notifications_statuses_total`,
      help: 'answers of the endpoint by status, counted per event',
      labelNames: ['endpoint', 'status'],
      registers,
      collect() {
        this.reset();
        for (const e of notifier.snapshot()) for (const [status, n] of Object.entries(e.Metrics.Statuses)) this.inc({ endpoint: e.name, status }, n);
      },
    });
  }
}
