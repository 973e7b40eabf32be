/**
 * The pull-through cache's TTL expiry (proxy.ttl, src/registry/expiry/): a pass shared by every
 * instance on the storage, not run by a read-only registry.
 */
import type { Feature } from './feature.js';

interface ExpiryConfig {
  proxy?: { ttl: number };
  storage: { maintenance: { readonly: { enabled: boolean } } };
}

export const expiryFeature: Feature<ExpiryConfig> = {
  name: 'expiry',
  enabled: (config) => (config.proxy?.ttl ?? 0) > 0 && !config.storage.maintenance.readonly.enabled,
  async load(config, { logger, scheduler }) {
    const { expiryTask } = await import('../registry/expiry/task.js');
    const ttl = config.proxy!.ttl;
    return {
      attach(running) {
        scheduler.every(expiryTask(running.driver, { ttlOf: () => ttl, passInterval: passInterval(ttl) }, scheduler.clock, logger.child({ component: 'expiry' })));
      },
    };
  },
};

/** a pass every tenth of the TTL, between 1 s and 1 h: content goes at most that long after it expired */
export function passInterval(ttl: number): number {
  return Math.min(3_600_000, Math.max(1000, Math.floor(ttl / 10)));
}
