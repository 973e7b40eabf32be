/**
 * The one start-up line an operator reads: version, address, storage (with the absolute data
 * path), authentication and modes; and a warning when anyone who reaches the port can delete.
 */
import { resolve } from 'node:path';
import { VERSION } from './version.js';

/** the configuration's keys the banner reads (app.ts passes the whole configuration) */
interface BannerConfig {
  storage: {
    filesystem?: { rootdirectory: string };
    s3?: { bucket: string; region: string; regionendpoint?: string; rootdirectory: string };
    maintenance: { readonly: { enabled: boolean } };
    delete: { enabled: boolean };
  };
  auth?: { token?: { issuer: { enabled: boolean } }; htpasswd?: unknown };
  proxy?: { remoteurl?: string; upstreams?: { prefix: string; remoteurl: string }[] };
}

export function bannerFields(config: BannerConfig, url: string, configSource?: string): Record<string, unknown> {
  return {
    version: VERSION,
    url,
    config: configSource,
    storage: describeStorage(config.storage),
    auth: config.auth?.token ? (config.auth.token.issuer.enabled ? 'token (built-in issuer)' : 'token') : config.auth?.htpasswd ? 'htpasswd' : 'none',
    modes: modes(config),
  };
}

function describeStorage(storage: BannerConfig['storage']): string {
  if (storage.filesystem) return `filesystem ${resolve(storage.filesystem.rootdirectory)}`;
  if (storage.s3) return `s3 bucket ${storage.s3.bucket}${storage.s3.regionendpoint ? ` at ${storage.s3.regionendpoint}` : ` in ${storage.s3.region}`}${storage.s3.rootdirectory ? ` under ${storage.s3.rootdirectory}` : ''}`;
  return 'inmemory (content ends with the process)';
}

function modes(config: BannerConfig): string[] {
  const on: string[] = [];
  if (config.proxy?.remoteurl) on.push(`pull-through cache of ${config.proxy.remoteurl}`);
  for (const mirror of config.proxy?.upstreams ?? []) on.push(`${mirror.prefix}/ mirrors ${mirror.remoteurl}`);
  if (config.storage.maintenance.readonly.enabled) on.push('read-only');
  on.push(config.storage.delete.enabled ? 'deletes enabled' : 'deletes disabled');
  return on;
}

/** deletes on, no authentication, and an address other machines reach */
export function exposureWarning(config: BannerConfig, host: string): string | undefined {
  const loopback = host === 'localhost' || host === '::1' || host.startsWith('127.');
  if (!config.storage.delete.enabled || config.auth || config.storage.maintenance.readonly.enabled || loopback) return undefined;
  const where = host === '0.0.0.0' || host === '::' || host === '' ? 'on every interface' : `on ${host}`;
  return `deletes are enabled without authentication ${where}: anyone who reaches this port can delete images (set auth, storage.delete.enabled: false, or listen on 127.0.0.1)`;
}
