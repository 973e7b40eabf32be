/**
 * The primary's debug listener (http.debug.addr with several workers): the same pages as a single
 * process's (src/debug/server.ts), each made of every worker's answer (ipc.ts, merge.ts).
 */
import type { Logger } from 'pino';
import { listenDebug, type DebugPages, type DebugServer } from '../debug/server.js';
import { askWorkers } from './ipc.js';
import { mergeVars } from './merge.js';

export interface PrimaryDebugOptions {
  prometheus: { enabled: boolean; path: string };
  logger: Logger;
}

export function startPrimaryDebugServer(address: { host: string; port: number }, options: PrimaryDebugOptions): Promise<DebugServer> {
  const pages: DebugPages = {
    async vars() {
      const answers = await askWorkers('vars');
      const merged = mergeVars(answers.map((a) => a.value)) as Record<string, unknown> | undefined;
      const workers = answers.map(({ worker, value }) => ({ pid: worker.process.pid, rss: (value as { memstats?: { rss?: number } }).memstats?.rss }));
      return { ...merged, uptime: process.uptime(), workers };
    },
    health: async () => Object.assign({}, ...(await askWorkers('health')).map((a) => a.value as Record<string, string>)),
    metrics: options.prometheus.enabled
      ? {
          path: options.prometheus.path,
          async render() {
            const { AggregatorRegistry } = await import('prom-client');
            const registry = AggregatorRegistry.aggregate((await askWorkers('metrics')).map((a) => a.value as Parameters<typeof AggregatorRegistry.aggregate>[0][number]));
            return { body: await registry.metrics(), contentType: registry.contentType };
          },
        }
      : undefined,
  };
  return listenDebug(address, pages, options.logger, 'debug listener started (the sum of every worker)');
}
