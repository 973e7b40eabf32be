/** Builds the pull-through cache from its options and the registry core (see README.md). */
import type { Logger } from 'pino';
import type { BlobStore } from '../registry/blobs.js';
import type { ContentSource } from '../registry/content.js';
import { ManifestStore } from '../registry/manifest-store.js';
import type { TagStore } from '../registry/tags.js';
import type { UploadSessions } from '../registry/uploads.js';
import type { StorageDriver } from '../storage/driver.js';
import { BlobFetches } from './blob-fetch.js';
import { PullThroughCache } from './cache.js';
import { Upstream } from './upstream.js';

export interface ProxyOptions {
  remoteurl: string;
  username?: string;
  password?: string;
}

/**
 * The upstream's deadlines (docs/decisions.md, "Pull-through cache"): the tag check and other
 * small requests get 5 s before the cache answers instead; manifest and blob GETs 30 s until the
 * response headers; a blob's body is given up after 60 s without a byte.
 */
export const PROXY_TIMEOUTS = { checkTimeoutMs: 5_000, fetchTimeoutMs: 30_000, idleTimeoutMs: 60_000 };

export function pullThroughCache(
  options: ProxyOptions,
  core: { driver: StorageDriver; blobs: BlobStore; uploads: UploadSessions; tags: TagStore; logger: Logger },
  stored: ContentSource,
): ContentSource {
  const logger = core.logger.child({ component: 'proxy' });
  const upstream = new Upstream({ ...options, ...PROXY_TIMEOUTS }, logger);
  const manifests = new ManifestStore(core.driver, core.blobs, core.tags, { cachedFromUpstream: true });
  const fetches = new BlobFetches(upstream, core.uploads, core.blobs, logger, PROXY_TIMEOUTS);
  return new PullThroughCache(upstream, stored, manifests, core.blobs, fetches, logger, PROXY_TIMEOUTS);
}

/** the message of every write's 405 */
export function refusedWrites(remoteurl: string): string {
  return `this registry is a pull-through cache of ${new URL(remoteurl).host}: pushes and deletes are not supported`;
}
