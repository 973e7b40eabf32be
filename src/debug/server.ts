/**
 * The debug listener (http.debug.addr), a plain node:http server apart from the registry's:
 * - /debug/vars: JSON with the notification endpoints and their counters (spec 6.6), under
 *   `notifications` and mirrored under `registry.notifications` (where Distribution puts them),
 *   plus process figures;
 * - /debug/health: 200 with `{}` when every health check passes, 503 with the failing checks by
 *   name (the configured `health:` checks, else a live probe of the store);
 * - the Prometheus path (default /metrics) when http.debug.prometheus.enabled;
 * - /debug/pprof/profile and /debug/pprof/heap: CPU profiles and heap snapshots (profiles.ts).
 * It only reads what the core and the notifier expose.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import type { Readiness } from '../health/readiness.js';
import type { Notifier } from '../notifications/notifier.js';
import type { Metrics } from './prometheus.js';

export interface DebugOptions {
  readiness: Readiness;
  /** the features' figures, each section under its name (features/feature.ts, Figures) */
  figures: () => Record<string, Record<string, number>>;
  notifier: Notifier;
  metrics?: { instance: Metrics; path: string };
  logger: Logger;
}

export interface DebugServer {
  url: string;
  close(): Promise<void>;
}

/** what a debug listener answers: this process's figures, or (workers/debug.ts) every worker's summed */
export interface DebugPages {
  vars(): unknown;
  /** the failing checks by name; none: healthy */
  health(): Promise<Record<string, string>>;
  metrics?: { path: string; render(): Promise<{ body: string; contentType: string }> };
  /** /debug/pprof profiles this process (not offered where the listener speaks for several workers) */
  profiles?: boolean;
}

export function startDebugServer(address: { host: string; port: number }, options: DebugOptions): Promise<DebugServer> {
  const { metrics } = options;
  const pages: DebugPages = {
    vars: () => ({ ...debugVars(options.notifier), ...options.figures() }),
    health: () => options.readiness(),
    profiles: true,
    metrics: metrics && {
      path: metrics.path,
      render: async () => ({ body: await metrics.instance.registry.metrics(), contentType: metrics.instance.registry.contentType }),
    },
  };
  return listenDebug(address, pages, options.logger, 'debug listener started');
}

/** serves `pages` on `address` (plain HTTP, GET and HEAD) and logs `started` with the address */
export async function listenDebug(address: { host: string; port: number }, pages: DebugPages, logger: Logger, started: string): Promise<DebugServer> {
  const server = createServer((req, res) => {
    handle(req, res, pages).catch((err) => {
      logger.error({ err }, 'debug listener request failed');
      if (!res.headersSent) send(res, 500, { error: String(err) });
      else res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(address.port, address.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = server.address() as AddressInfo;
  const host = bound.family === 'IPv6' ? `[${bound.address}]` : bound.address;
  const url = `http://${host}:${bound.port}`;
  logger.info({ addr: `${host}:${bound.port}`, prometheus: pages.metrics?.path }, started);
  return { url, close: () => closeServer(server) };
}

async function handle(req: IncomingMessage, res: ServerResponse, pages: DebugPages): Promise<void> {
  const path = (req.url ?? '/').split('?')[0];
  if (req.method !== 'GET' && req.method !== 'HEAD') return send(res, 405, { error: 'only GET and HEAD' }, { allow: 'GET, HEAD' });
  if (path === '/debug/vars') return send(res, 200, await pages.vars());
  if (path === '/debug/health') {
    const failures = await pages.health();
    return send(res, Object.keys(failures).length === 0 ? 200 : 503, failures);
  }
  if (path === '/debug/pprof' || path.startsWith('/debug/pprof/')) {
    if (!pages.profiles) return send(res, 404, { error: 'profiles are taken per process: with http.workers above 1 the debug listener speaks for several, so /debug/pprof is not offered' });
    // loaded on the first profile: node:inspector and node:v8 are not needed otherwise
    const { serveProfile } = await import('./profiles.js');
    const refused = await serveProfile(path, new URL(req.url ?? '/', 'http://debug').searchParams, req, res);
    if (refused) send(res, refused.status, { error: refused.error });
    return;
  }
  if (pages.metrics && path === pages.metrics.path) {
    const { body, contentType } = await pages.metrics.render();
    res.writeHead(200, { 'content-type': contentType, 'content-length': Buffer.byteLength(body) });
    res.end(req.method === 'HEAD' ? undefined : body);
    return;
  }
  send(res, 404, { error: `no such debug page: ${path}` });
}

/** the process's own part of /debug/vars (the features' figures are added to it) */
export function debugVars(notifier: Notifier): Record<string, unknown> {
  const notifications = { endpoints: notifier.snapshot() };
  const memory = process.memoryUsage();
  return {
    cmdline: process.argv,
    uptime: process.uptime(),
    memstats: { rss: memory.rss, heapTotal: memory.heapTotal, heapUsed: memory.heapUsed, external: memory.external, arrayBuffers: memory.arrayBuffers },
    notifications,
    registry: { notifications },
  };
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(res.req.method === 'HEAD' ? undefined : text);
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeIdleConnections();
    setTimeout(() => server.closeAllConnections(), 1000).unref();
  });
}
