/**
 * The pull-through cache's TTL expiry (proxy.ttl, and each of proxy.upstreams' ttl;
 * src/registry/expiry/): a pass shared by every instance on the storage, not run by a read-only
 * registry. Repositories outside every mirror prefix have no TTL.
 */
import type { PolicyOptions } from '../policies/options.js';
import type { Feature } from './feature.js';

/** Distribution's default TTL, for a mirror whose ttl is unset */
const DEFAULT_TTL = 168 * 3_600_000;

export interface ProxyTTLConfig {
  proxy?: { remoteurl?: string; ttl?: number; upstreams?: { prefix: string; ttl?: number }[] };
}

interface ExpiryConfig extends ProxyTTLConfig {
  storage: { maintenance: { readonly: { enabled: boolean } } };
  /** immutable tags never expire */
  policies?: PolicyOptions[];
}

/** the TTL of a repository's cached content (undefined or 0: kept), and every TTL configured */
export function proxyTTLs(proxy: ProxyTTLConfig['proxy']): { ttlOf(name: string): number | undefined; all: number[] } {
  if (!proxy) return { ttlOf: () => undefined, all: [] };
  if (!proxy.upstreams) {
    const ttl = proxy.ttl ?? DEFAULT_TTL;
    return { ttlOf: () => ttl, all: ttl > 0 ? [ttl] : [] };
  }
  const mirrors = proxy.upstreams.map((u) => ({ prefix: `${u.prefix}/`, ttl: u.ttl ?? DEFAULT_TTL }));
  return {
    ttlOf: (name) => mirrors.find((m) => name.startsWith(m.prefix))?.ttl,
    all: mirrors.map((m) => m.ttl).filter((ttl) => ttl > 0),
  };
}

export const expiryFeature: Feature<ExpiryConfig> = {
  name: 'expiry',
  enabled: (config) => proxyTTLs(config.proxy).all.length > 0 && !config.storage.maintenance.readonly.enabled,
  async load(config, { logger, scheduler }) {
    const [{ expiryTask }, { fixedTags }] = await Promise.all([import('../registry/expiry/task.js'), import('../policies/immutable-tags.js')]);
    const { ttlOf, all } = proxyTTLs(config.proxy);
    return {
      attach(running) {
        scheduler.every(expiryTask(running.driver, { ttlOf, passInterval: passInterval(Math.min(...all)), fixedTag: fixedTags(config.policies) }, scheduler.clock, logger.child({ component: 'expiry' }), running.index));
      },
    };
  },
};

/** a pass every tenth of the (shortest) TTL, between 1 s and 1 h: content goes at most that long after it expired */
export function passInterval(ttl: number): number {
  return Math.min(3_600_000, Math.max(1000, Math.floor(ttl / 10)));
}
