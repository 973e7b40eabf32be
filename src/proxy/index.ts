/** Builds the pull-through cache from its options and the registry core (see README.md). */
import type { Logger } from 'pino';
import type { BlobStore } from '../registry/blobs.js';
import type { ContentSource } from '../registry/content.js';
import { ManifestStore } from '../registry/manifest-store.js';
import { LateConfigs } from '../registry/indexing/late-configs.js';
import type { IndexSink } from '../registry/indexing/sink.js';
import type { TagStore } from '../registry/tags.js';
import type { UploadSessions } from '../registry/uploads.js';
import type { StorageDriver } from '../storage/driver.js';
import { BlobFetches } from './blob-fetch.js';
import { PullThroughCache } from './cache.js';
import { MirrorRoutes } from './mirrors.js';
import { MirrorRouter } from './router.js';
import { ProxyStats } from './stats.js';
import { Upstream } from './upstream.js';
import type { AuditSink } from '../audit/record.js';

/** one upstream, its password already read from its file where it came from one */
export interface ProxyOptions {
  remoteurl: string;
  username?: string;
  password?: string;
  /** the repository's name upstream (a mirror under a prefix) */
  remoteName?: (local: string) => string;
  /** token realm hosts and blob redirect hosts allowed besides the upstream's own (hosts.ts) */
  realmhosts?: readonly string[];
  redirecthosts?: readonly string[];
}

export interface MirrorOptions extends ProxyOptions {
  prefix: string;
}

type Core = { driver: StorageDriver; blobs: BlobStore; uploads: UploadSessions; tags: TagStore; logger: Logger; index?: IndexSink; audit?: AuditSink };

/** what the configured mirrors plug into the registry */
export interface ProxyPlan {
  content(core: Core, stored: ContentSource): ContentSource;
  /** the 405's message for a write to `name`, or undefined when `name` takes writes */
  refuseWrites(name: string): string | undefined;
  /** containerd's `ns`: the local name of `name` on that registry host, if one is mirrored */
  withNamespace?(name: string, ns: string): string | undefined;
  /** hits, misses and bytes fetched, over every upstream */
  stats: ProxyStats;
}

/** Distribution's single upstream (the whole registry a mirror) or several under prefixes */
export function proxyPlan(options: { single: ProxyOptions } | { mirrors: MirrorOptions[] }): ProxyPlan {
  const stats = new ProxyStats();
  if ('single' in options) {
    const message = refusedWrites(options.single.remoteurl);
    return { content: (core, stored) => pullThroughCache(options.single, core, stored, stats), refuseWrites: () => message, stats };
  }
  const routes = new MirrorRoutes(options.mirrors);
  return {
    stats,
    content(core, stored) {
      const caches = new Map(
        options.mirrors.map((mirror) => [mirror.prefix, pullThroughCache({ ...mirror, remoteName: (name) => routes.remoteName(mirror, name) }, core, stored, stats)]),
      );
      return new MirrorRouter((name) => caches.get(routes.of(name)?.prefix ?? ''), stored);
    },
    refuseWrites(name) {
      const mirror = routes.of(name);
      return mirror && `${mirror.prefix}/ is a pull-through cache of ${new URL(mirror.remoteurl).host}: pushes and deletes are not supported there (push to a repository outside the mirror prefixes)`;
    },
    withNamespace: (name, ns) => routes.withNamespace(name, ns),
  };
}

/**
 * The upstream's deadlines (docs/decisions.md, "Pull-through cache"): the tag check and other
 * small requests get 5 s before the cache answers instead; manifest and blob GETs 30 s until the
 * response headers; a blob's body is given up after 60 s without a byte.
 */
export const PROXY_TIMEOUTS = { checkTimeoutMs: 5_000, fetchTimeoutMs: 30_000, idleTimeoutMs: 60_000 };

function pullThroughCache(options: ProxyOptions, core: Core, stored: ContentSource, stats: ProxyStats): ContentSource {
  // every line of this upstream's cache names it here, once: the lines themselves do not repeat the key
  const logger = core.logger.child({ component: 'proxy', upstream: new URL(options.remoteurl).host });
  const upstream = new Upstream({ ...options, ...PROXY_TIMEOUTS }, logger);
  const manifests = new ManifestStore(core.driver, core.blobs, core.tags, { cachedFromUpstream: true, index: core.index });
  const fetches = new BlobFetches(upstream, core.uploads, core.blobs, logger, PROXY_TIMEOUTS, stats);
  const lateConfigs = core.index && new LateConfigs(core.driver, core.index);
  const audit = core.audit && { sink: core.audit, upstream: new URL(options.remoteurl).host };
  return new PullThroughCache(upstream, stored, manifests, core.blobs, fetches, logger, PROXY_TIMEOUTS, stats, lateConfigs, audit);
}

/** the message of every write's 405 with a single upstream */
function refusedWrites(remoteurl: string): string {
  return `this registry is a pull-through cache of ${new URL(remoteurl).host}: pushes and deletes are not supported`;
}
