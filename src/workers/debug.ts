/**
 * The primary's debug listener (http.debug.addr with several workers): the same pages as a single
 * process's (src/debug/server.ts), each made of every worker's answer (ipc.ts, merge.ts).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { askWorkers } from './ipc.js';
import { mergeVars } from './merge.js';

export interface PrimaryDebugOptions {
  prometheus: { enabled: boolean; path: string };
  logger: Logger;
}

export async function startPrimaryDebugServer(address: { host: string; port: number }, options: PrimaryDebugOptions): Promise<{ url: string; close(): Promise<void> }> {
  const server = createServer((req, res) => {
    handle(req, res, options).catch((err) => {
      options.logger.error({ err }, 'debug listener request failed');
      if (!res.headersSent) send(res, 500, { error: String(err) });
      else res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(address.port, address.host, () => resolve());
  });
  const bound = server.address() as AddressInfo;
  const url = `http://${bound.family === 'IPv6' ? `[${bound.address}]` : bound.address}:${bound.port}`;
  options.logger.info({ addr: url }, 'debug listener started (the sum of every worker)');
  return {
    url,
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function handle(req: IncomingMessage, res: ServerResponse, options: PrimaryDebugOptions): Promise<void> {
  const path = (req.url ?? '/').split('?')[0];
  if (req.method !== 'GET' && req.method !== 'HEAD') return send(res, 405, { error: 'only GET and HEAD' }, { allow: 'GET, HEAD' });
  if (path === '/debug/vars') {
    const answers = await askWorkers('vars');
    const merged = mergeVars(answers.map((a) => a.value)) as Record<string, unknown> | undefined;
    const workers = answers.map(({ worker, value }) => ({ pid: worker.process.pid, rss: (value as { memstats?: { rss?: number } }).memstats?.rss }));
    return send(res, 200, { ...merged, uptime: process.uptime(), workers });
  }
  if (path === '/debug/health') {
    const failures = Object.assign({}, ...(await askWorkers('health')).map((a) => a.value as Record<string, string>));
    return send(res, Object.keys(failures).length === 0 ? 200 : 503, failures);
  }
  if (options.prometheus.enabled && path === options.prometheus.path) {
    const { AggregatorRegistry } = await import('prom-client');
    const registry = AggregatorRegistry.aggregate((await askWorkers('metrics')).map((a) => a.value as Parameters<typeof AggregatorRegistry.aggregate>[0][number]));
    const body = await registry.metrics();
    res.writeHead(200, { 'content-type': registry.contentType, 'content-length': Buffer.byteLength(body) });
    res.end(req.method === 'HEAD' ? undefined : body);
    return;
  }
  send(res, 404, { error: `no such debug page: ${path}` });
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(res.req.method === 'HEAD' ? undefined : text);
}
