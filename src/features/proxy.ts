/**
 * The pull-through cache: Distribution's proxy.remoteurl (the whole registry a mirror, every
 * write 405) or berth's proxy.upstreams (mirrors under repository prefixes beside private
 * repositories). Passwords may come from files, read here at start.
 */
import { readFile } from 'node:fs/promises';
import { ConfigError } from '../config/errors.js';
import type { Feature } from './feature.js';

interface Credentials {
  remoteurl: string;
  username?: string;
  password?: string;
  passwordfile?: string;
  realmhosts?: string[];
  redirecthosts?: string[];
}

interface ProxyConfig {
  proxy?: Partial<Credentials> & { upstreams?: (Credentials & { prefix: string })[] };
}

export const proxyFeature: Feature<ProxyConfig> = {
  name: 'proxy',
  enabled: (config) => config.proxy !== undefined,
  async load(config) {
    const { proxyPlan } = await import('../proxy/index.js');
    const proxy = config.proxy!;
    const plan = proxy.upstreams
      ? proxyPlan({ mirrors: await Promise.all(proxy.upstreams.map(async (u, i) => ({ ...u, password: await password(u, `proxy.upstreams.${i}`) }))) })
      : proxyPlan({ single: { remoteurl: proxy.remoteurl!, username: proxy.username, password: await password(proxy as Credentials, 'proxy'), realmhosts: proxy.realmhosts, redirecthosts: proxy.redirecthosts } });
    return {
      contentSource: (core, stored) => plan.content(core, stored),
      refuseWrites: plan.refuseWrites,
      withNamespace: plan.withNamespace,
      figures: () => ({ proxy: plan.stats.snapshot() }),
    };
  },
};

/** the password, from the configuration or its file (without the file's final newline) */
export async function password(credentials: Omit<Credentials, 'remoteurl'>, key: string): Promise<string | undefined> {
  if (credentials.passwordfile === undefined) return credentials.password;
  try {
    return (await readFile(credentials.passwordfile, 'utf8')).replace(/\r?\n$/, '');
  } catch (err) {
    throw new ConfigError([`${key}.passwordfile: cannot read ${credentials.passwordfile}: ${(err as NodeJS.ErrnoException).code ?? (err as Error).message}`], `${key}.passwordfile`);
  }
}
