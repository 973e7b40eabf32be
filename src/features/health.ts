/**
 * Distribution's `health:` checks (storage, files, HTTP, TCP), polled on the scheduler; while one
 * fails every request answers 503 and /readyz and /debug/health say which.
 */
import type { Feature } from './feature.js';

interface Polling {
  interval: number;
  threshold: number;
  timeout: number;
}

interface HealthConfig {
  health?: {
    storagedriver?: Polling & { enabled: boolean };
    file: { file: string; interval: number }[];
    http: (Polling & { uri: string; headers: Record<string, string[]>; statuscode: number })[];
    tcp: (Polling & { addr: string })[];
  };
}

export const healthFeature: Feature<HealthConfig> = {
  name: 'health',
  enabled: ({ health }) => health !== undefined && (health.storagedriver?.enabled === true || health.file.length + health.http.length + health.tcp.length > 0),
  async load(config, { logger, scheduler }) {
    const health = config.health!;
    const { HealthMonitor } = await import('../health/monitor.js');
    const checks = await import('../health/checks.js');
    const { storageCheckName } = await import('../health/readiness.js');
    const monitor = new HealthMonitor(scheduler, logger);
    for (const file of health.file) monitor.add(file.file, checks.fileCheck(file.file), { interval: file.interval, threshold: 0 });
    for (const http of health.http) monitor.add(http.uri, checks.httpCheck(http), http);
    for (const tcp of health.tcp) monitor.add(tcp.addr, checks.tcpCheck(tcp), tcp);
    return {
      health: monitor,
      attach({ driver }) {
        const storage = health.storagedriver;
        if (storage?.enabled) monitor.add(storageCheckName(driver), checks.storageCheck(driver, storage.timeout), storage);
      },
    };
  },
};
