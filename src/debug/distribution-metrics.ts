/**
 * The metric families of CNCF Distribution (registry/handlers/app.go, registry/storage/driver/base,
 * registry/storage/cache, notifications/metrics.go, registry/proxy/proxymetrics.go, through
 * docker/go-metrics), with their names, labels and meanings, so dashboards written for
 * Distribution read berth. They are served beside berth's own `berth_*` families, from the same
 * observations. What berth cannot count as Distribution does is left out rather than faked
 * (docs/configuration.md, "Debug listener").
 */
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import type { Notifier } from '../notifications/notifier.js';

/** Distribution's route names (registry/api/v2/routes.go, "-" as "_"), by berth's route kind */
const HANDLERS: Record<string, string> = {
  base: 'base',
  catalog: 'catalog',
  tags: 'tags',
  manifest: 'manifest',
  blob: 'blob',
  uploads: 'blob_upload',
  upload: 'blob_upload_chunk',
  referrers: 'referrers',
};

/** the storage calls Distribution's base driver times, by berth's operation name */
const ACTIONS: Record<string, string> = {
  getcontent: 'GetContent',
  putcontent: 'PutContent',
  stat: 'Stat',
  list: 'List',
  listnames: 'List',
  move: 'Move',
  delete: 'Delete',
  redirecturl: 'RedirectURL',
};

/** Distribution's driver names, where they differ from berth's */
const DRIVERS: Record<string, string> = { s3: 's3aws' };

/** go-metrics' default buckets: request durations, and 1 KiB to 2 GiB in powers of two (22) for sizes */
const DURATION_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 60];
const SIZE_BUCKETS = Array.from({ length: 22 }, (_, i) => 1024 * 2 ** i);
/** Prometheus' default buckets (a go-metrics timer) */
const TIMER_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export interface CacheCounts {
  requests: number;
  hits: number;
  errors: number;
}

export class DistributionMetrics {
  private readonly requests: Counter<'handler' | 'code' | 'method'>;
  private readonly duration: Histogram<'handler' | 'method'>;
  private readonly requestSize: Histogram<'handler'>;
  private readonly responseSize: Histogram<'handler'>;
  private readonly storage: Histogram<'driver' | 'action'>;
  private readonly inFlight: Gauge<'handler'>;

  constructor(private readonly registry: Registry) {
    const registers = [registry];
    this.requests = new Counter({ name: 'registry_http_requests_total', help: 'Total number of HTTP requests made.', labelNames: ['handler', 'code', 'method'], registers });
    this.duration = new Histogram({ name: 'registry_http_request_duration_seconds', help: 'The HTTP request latencies in seconds.', labelNames: ['handler', 'method'], buckets: DURATION_BUCKETS, registers });
    this.requestSize = new Histogram({ name: 'registry_http_request_size_bytes', help: 'The HTTP request sizes in bytes.', labelNames: ['handler'], buckets: SIZE_BUCKETS, registers });
    this.responseSize = new Histogram({ name: 'registry_http_response_size_bytes', help: 'The HTTP response sizes in bytes.', labelNames: ['handler'], buckets: SIZE_BUCKETS, registers });
    this.inFlight = new Gauge({ name: 'registry_http_in_flight_requests', help: 'The in-flight HTTP requests', labelNames: ['handler'], registers });
    // every handler from the start, at 0, as Distribution registers them
    for (const handler of new Set(Object.values(HANDLERS))) this.inFlight.set({ handler }, 0);
    this.storage = new Histogram({ name: 'registry_storage_action_seconds', help: 'The number of seconds that the storage action takes', labelNames: ['driver', 'action'], buckets: TIMER_BUCKETS, registers });
  }

  /** a request answered on a route of the API (others, such as 404s outside /v2/, are not counted, as in Distribution) */
  observeRequest(method: string, route: string, status: number, seconds: number, bytesIn: number, bytesOut: number): void {
    const handler = HANDLERS[route];
    if (handler === undefined) return;
    // promhttp's labels: the method in lower case, the status as a number
    this.requests.inc({ handler, code: String(status), method: method.toLowerCase() });
    this.duration.observe({ handler, method: method.toLowerCase() }, seconds);
    this.requestSize.observe({ handler }, bytesIn);
    this.responseSize.observe({ handler }, bytesOut);
  }

  /** a request started on a route of kind `route`; the function returned counts it finished (once) */
  requestStarted(route: string): () => void {
    const handler = HANDLERS[route];
    if (handler === undefined) return () => {};
    this.inFlight.inc({ handler });
    let done = false;
    return () => {
      if (done) return;
      done = true;
      this.inFlight.dec({ handler });
    };
  }

  observeStorage(driver: string, operation: string, seconds: number): void {
    const action = ACTIONS[operation];
    if (action !== undefined) this.storage.observe({ driver: DRIVERS[driver] ?? driver, action }, seconds);
  }

  /** registry_storage_cache_*: the metadata cache's reads, read at each scrape */
  watchCache(counts: Readonly<CacheCounts>): void {
    const counter = (name: keyof CacheCounts, help: string) =>
      new Counter({
        name: `registry_storage_cache_${name}_total`,
        help,
        registers: [this.registry],
        collect() {
          this.reset();
          this.inc(counts[name]);
        },
      });
    counter('requests', 'The number of cache request received');
    counter('hits', 'The number of cache request received');
    counter('errors', 'The number of cache request errors');
  }

  /** registry_notifications_*: the endpoints' counters (those of /debug/vars), read at each scrape */
  watchNotifications(notifier: Notifier): void {
    const registers = [this.registry];
    new Counter({
      name: 'registry_notifications_events_total',
      help: 'The number of total events',
      labelNames: ['type', 'endpoint'],
      registers,
      collect() {
        this.reset();
        for (const { name: endpoint, Metrics: m } of notifier.snapshot()) {
          for (const [type, n] of [['Events', m.Events], ['Successes', m.Successes], ['Failures', m.Failures], ['Errors', m.Errors]] as const) this.inc({ type, endpoint }, n);
        }
      },
    });
    new Gauge({
      name: 'registry_notifications_pending_total',
      help: 'The gauge of pending events in queue',
      labelNames: ['endpoint'],
      registers,
      collect() {
        this.reset();
        for (const e of notifier.snapshot()) this.set({ endpoint: e.name }, e.Metrics.Pending);
      },
    });
    new Counter({
      name: 'registry_notifications_status_total',
      help: 'The number of status code',
      labelNames: ['code', 'endpoint'],
      registers,
      collect() {
        this.reset();
        for (const e of notifier.snapshot()) for (const [code, n] of Object.entries(e.Metrics.Statuses)) this.inc({ code, endpoint: e.name }, n);
      },
    });
  }

  /** registry_proxy_*: the pull-through cache's counts (the `proxy` figures), when it runs */
  watchProxy(proxy: () => Record<string, number> | undefined): void {
    const family = (name: string, help: string, key: 'Requests' | 'Hits' | 'Misses' | 'BytesFetched') =>
      new Counter({
        name: `registry_proxy_${name}_total`,
        help,
        labelNames: ['type'],
        registers: [this.registry],
        collect() {
          this.reset();
          const figures = proxy();
          if (figures === undefined) return;
          for (const type of ['blob', 'manifest'] as const) this.inc({ type }, figures[`${type}${key}`] ?? 0);
        },
      });
    family('requests', 'The number of total incoming proxy request received', 'Requests');
    family('hits', 'The number of total proxy request hits', 'Hits');
    family('misses', 'The number of total proxy request misses', 'Misses');
    family('pulled_bytes', 'The size of total bytes pulled from the upstream', 'BytesFetched');
  }
}
