/**
 * The web interface (ui.enabled, on by default): pages under /ui/ on the main port, drawn in the
 * browser from the registry's own API and read-only helpers (src/ui/). Its modules and the built
 * assets are loaded only when it is on.
 */
import type { RegistryState } from '../ui/api.js';
import type { Feature } from './feature.js';

interface UIConfig {
  ui: { enabled: boolean };
  http: { prefix?: string; host?: string };
  auth?: { token?: unknown; htpasswd?: unknown; oidc?: unknown };
  storage: { delete: { enabled: boolean }; maintenance: { readonly: { enabled: boolean } }; filesystem?: unknown; s3?: unknown; inmemory?: unknown };
  proxy?: { remoteurl?: string; upstreams?: { prefix: string; remoteurl: string }[] };
}

export const uiFeature: Feature<UIConfig> = {
  name: 'ui',
  enabled: (config) => config.ui.enabled,
  async load(config, { logger }) {
    const [{ loadAssets }, { uiPages }, { normalisePrefix }, { VERSION }] = await Promise.all([
      import('../ui/assets.js'),
      import('../ui/server.js'),
      import('../http/options.js'),
      import('../version.js'),
    ]);
    const built = await loadAssets();
    if (!built) logger.warn('the web interface is not built (run `npm run build`): /ui/ answers 503 until it is');
    const settings = {
      prefix: normalisePrefix(config.http.prefix),
      host: config.http.host ? new URL(config.http.host).host : undefined,
      plainHTTP: config.http.host ? new URL(config.http.host).protocol === 'http:' : undefined,
      auth: config.auth?.token ? ('token' as const) : config.auth?.htpasswd ? ('htpasswd' as const) : ('none' as const),
      signIn: config.auth?.oidc !== undefined,
      deletes: config.storage.delete.enabled,
      readOnly: config.storage.maintenance.readonly.enabled,
      version: VERSION,
    };
    const storage = config.storage;
    const state: RegistryState = {
      about: {
        version: VERSION,
        driver: storage.s3 ? 's3' : storage.inmemory ? 'inmemory' : 'filesystem',
        readOnly: settings.readOnly,
        deletes: settings.deletes,
        auth: settings.auth,
        mirrors: config.proxy?.remoteurl
          ? [{ prefix: '', remoteurl: withoutUserinfo(config.proxy.remoteurl) }]
          : (config.proxy?.upstreams ?? []).map(({ prefix, remoteurl }) => ({ prefix, remoteurl: withoutUserinfo(remoteurl) })),
      },
    };
    return {
      pages: uiPages(built, settings, state),
      attach({ driver, notifier, figures, readiness }) {
        state.driver = driver;
        state.figures = figures;
        state.health = readiness;
        state.notifications = () =>
          notifier.snapshot().map(({ name, Metrics: { Statuses, ...counters } }) => ({ name, counters, statuses: Statuses }));
      },
    };
  },
};

/** an upstream's URL as the registry page shows it: never with credentials written into it */
function withoutUserinfo(url: string): string {
  const parsed = new URL(url);
  parsed.username = '';
  parsed.password = '';
  return parsed.toString();
}
