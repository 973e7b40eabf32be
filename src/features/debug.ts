/**
 * The debug listener (http.debug.addr: /debug/vars, /debug/health) and, with
 * http.debug.prometheus.enabled, Prometheus metrics: requests, storage calls (the driver is wrapped
 * to time them) and notification counters. prom-client is loaded only then.
 */
import { parseAddr } from '../http/address.js';
import { workerIndex } from '../workers/index.js';
import type { Feature, FeatureParts } from './feature.js';

interface DebugConfig {
  http: { debug?: { addr: string; prometheus: { enabled: boolean; path: string } } };
}

export const debugFeature: Feature<DebugConfig> = {
  name: 'debug',
  enabled: (config) => config.http.debug !== undefined,
  async load(config, { logger }) {
    const debug = config.http.debug!;
    const metrics = debug.prometheus.enabled ? new (await import('../debug/prometheus.js')).Metrics() : undefined;
    const InstrumentedDriver = metrics && (await import('../debug/instrumented-driver.js')).InstrumentedDriver;
    let server: { url: string; close(): Promise<void> } | undefined;
    const parts: FeatureParts = {
      requestMetrics: metrics,
      attach({ notifier, figures }) {
        metrics?.watchNotifications(notifier);
        metrics?.watchFigures(figures);
      },
      async listening({ readiness, notifier, figures }) {
        if (workerIndex() !== undefined) {
          // one of several workers: the primary serves the listener and asks each worker (src/workers/)
          const { answerPrimary } = await import('../workers/ipc.js');
          const { debugVars } = await import('../debug/server.js');
          answerPrimary({ vars: () => ({ ...debugVars(notifier), ...figures() }), health: readiness, metrics: () => metrics?.registry.getMetricsAsJSON() ?? [] });
          return undefined;
        }
        const { startDebugServer } = await import('../debug/server.js');
        server = await startDebugServer(parseAddr(debug.addr), {
          readiness,
          figures,
          notifier,
          metrics: metrics && { instance: metrics, path: debug.prometheus.path },
          logger,
        });
        return server.url;
      },
      close: async () => server?.close(),
    };
    if (metrics) parts.watchCache = (counts) => metrics.watchCache(counts);
    if (metrics && InstrumentedDriver) parts.wrapDriver = (inner) => new InstrumentedDriver(inner, metrics);
    return parts;
  },
};
