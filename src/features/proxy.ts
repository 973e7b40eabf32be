/** The pull-through cache (proxy.remoteurl): reads go through the upstream, every write answers 405. */
import type { Feature } from './feature.js';

interface ProxyConfig {
  proxy?: { remoteurl: string; username?: string; password?: string };
}

export const proxyFeature: Feature<ProxyConfig> = {
  name: 'proxy',
  enabled: (config) => config.proxy !== undefined,
  async load(config) {
    const { pullThroughCache, refusedWrites } = await import('../proxy/index.js');
    const proxy = config.proxy!;
    return {
      contentSource: (core, stored) => pullThroughCache(proxy, core, stored),
      refuseWrites: refusedWrites(proxy.remoteurl),
    };
  },
};
