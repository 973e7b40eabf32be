/**
 * The composition root: builds the storage driver, the registry core and the HTTP server from a
 * validated Config. Nothing else constructs these, and nothing below this file reads the Config:
 * each room gets its own small options.
 *
 * Optional features (S3, the CDN middleware, Redis rate limits, the debug listener and metrics)
 * come in through one door, features/: each is loaded only when the configuration turns it on, so
 * a registry on the filesystem does not carry the AWS SDK, ioredis or prom-client (about 15 MiB of
 * RSS, docs/decisions.md "Memory"; test/app/lazy-modules.test.ts guards this).
 */
import type { AddressInfo, Server } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { createAuth } from './auth/index.js';
import { bannerFields, exposureWarning } from './banner.js';
import { ConfigError } from './config/errors.js';
import { readTLS } from './config/named-files.js';
import type { Config } from './config/schema.js';
import { FEATURES } from './features/index.js';
import type { FeatureParts, Running } from './features/feature.js';
import { configuredDriver } from './features/storage.js';
import { paceShortLivedBuffers } from './runtime/gc-pacing.js';
import { readiness } from './health/readiness.js';
import { parseAddr } from './http/address.js';
import { normalisePrefix, type EdgeOptions } from './http/options.js';
import { connectionLimits } from './http/limits.js';
import { CatalogCursors } from './http/catalog-cursor.js';
import { buildServer } from './http/server.js';
import { uploadSecret } from './http/secret.js';
import { UploadStateSigner } from './http/upload-state.js';
import { URLBuilder } from './http/urls.js';
import { createLogger } from './log.js';
import { teeEvents } from './notifications/events.js';
import { Notifier } from './notifications/notifier.js';
import { BlobStore } from './registry/blobs.js';
import { Catalog } from './registry/catalog.js';
import { DirectoryCache, DIRECTORY_CACHE_ENTRIES } from './registry/cache/directory-cache.js';
import { StoredContent, type ContentSource } from './registry/content.js';
import { TagStore } from './registry/tags.js';
import { ManifestStore } from './registry/manifest-store.js';
import type { LayerURLPolicy } from './registry/manifests/index.js';
import { UploadSessions } from './registry/uploads.js';
import type { Clock } from './scheduler/clock.js';
import { Scheduler } from './scheduler/scheduler.js';
import type { StorageDriver } from './storage/driver.js';

export { parseAddr };

export interface App {
  config: Config;
  driver: StorageDriver;
  server: FastifyInstance;
  logger: Logger;
  /** the notification endpoints and their queues */
  notifier: Notifier;
  /** every background task; stopped by close() */
  scheduler: Scheduler;
  /** the debug listener's base URL once listening (http.debug.addr) */
  debugURL?: string;
  /** starts listening on http.addr (or `address` when given); resolves to the base URL */
  listen(address?: { host: string; port: number }): Promise<string>;
  /**
   * Stops accepting, lets requests in flight finish for up to `graceMs` (default http.draintimeout)
   * and cuts what is left, then gives queued notification events up to `graceMs` to be delivered.
   */
  close(graceMs?: number): Promise<void>;
}

export interface AppOptions {
  logger?: Logger;
  /** the storage driver to use instead of the configured one (the storage features still wrap it) */
  driver?: StorageDriver;
  /** the time background tasks run on (tests pass a ManualClock) */
  clock?: Clock;
  /** where the configuration came from, for the start-up banner */
  configSource?: string;
  /**
   * one of several worker processes (http.workers, src/workers/): only the first runs the
   * periodic tasks and logs the banner; the primary process serves the debug listener
   */
  worker?: { index: number };
}

export async function createApp(config: Config, options: AppOptions = {}): Promise<App> {
  paceShortLivedBuffers(); // every entry point turns it on: an app built in a test process too
  const logger = options.logger ?? createLogger(config.log);
  const scheduler = new Scheduler(logger, options.clock, (options.worker?.index ?? 0) === 0);
  const enabled: FeatureParts[] = [];
  for (const feature of FEATURES) {
    if (feature.enabled(config)) enabled.push(await feature.load(config, { logger, scheduler }));
  }
  const configured = options.driver ?? (await configuredDriver(config, logger));
  const driver = enabled.reduce<StorageDriver>((inner, parts) => parts.wrapDriver?.(inner) ?? inner, configured);
  const notifier = new Notifier(config.notifications, logger, { clock: scheduler.clock });
  const monitor = enabled.find((parts) => parts.health)?.health;
  const figures = () => Object.assign({}, ...enabled.map((parts) => parts.figures?.() ?? {}));
  const running: Running = { driver, notifier, logger, readiness: readiness(driver, monitor), figures, index: enabled.find((parts) => parts.repositorySink)?.repositorySink, database: enabled.find((parts) => parts.database)?.database };
  for (const parts of enabled) parts.attach?.(running);

  const sharedCache = enabled.find((parts) => parts.sharedCache)?.sharedCache;
  const links = new DirectoryCache(driver, cacheEntries(config.storage.cache), sharedCache);
  for (const parts of enabled) parts.watchCache?.(links.counts);
  const index = enabled.find((parts) => parts.indexSink)?.indexSink;
  const listingSource = enabled.find((parts) => parts.listingSource)?.listingSource;
  const blobs = new BlobStore(driver, enabled.find((parts) => parts.blobGuard)?.blobGuard?.(driver), { links, index });
  const purging = config.storage.maintenance.uploadpurging;
  const uploads = new UploadSessions(driver, blobs, { maxAge: purging.enabled && !purging.dryrun ? purging.age : undefined, clock: scheduler.clock });
  const tags = new TagStore(driver, { links, index, source: listingSource });
  const policies = await enabled.find((parts) => parts.policies)?.policies?.(running);
  const manifests = new ManifestStore(driver, blobs, tags, {
    urlPolicy: config.validation.disabled ? undefined : urlPolicy(config),
    schema1: config.compatibility.schema1.enabled,
    now: () => scheduler.clock.now(),
    revisions: links,
    shared: sharedCache,
    index,
    guard: policies?.manifests,
  });
  const stored = new StoredContent(blobs, manifests, tags);
  const audit = enabled.find((parts) => parts.audit)?.audit;
  const core = { driver, blobs, uploads, manifests, tags, logger, index, audit };
  const content = enabled.reduce((inner, parts) => parts.contentSource?.(core, inner) ?? inner, stored as ContentSource);
  for (const parts of enabled) parts.withCore?.(core);
  const events = teeEvents([notifier, ...enabled.flatMap((parts) => (parts.events ? [parts.events] : []))]);
  await driver.ready?.(); // e.g. the S3 bucket exists: fail at start, not on the first push
  const secret = await uploadSecret(config.http.secret, driver, { readOnly: config.storage.maintenance.readonly.enabled, logger });
  const prefix = normalisePrefix(config.http.prefix);
  const sharedLimiter = enabled.find((parts) => parts.rateLimiter)?.rateLimiter;
  // files named by the configuration (htpasswd, keys, certificates) are read now: a problem stops
  // start-up with the same kind of message as a bad key
  const { auth, tls } = await atStartup(async () => ({
    auth: await createAuth({ auth: config.auth, ratelimit: config.ratelimit, prefix }, { logger, clock: scheduler.clock, sharedLimiter, processes: config.http.workers, secret, audit, tokens: enabled.find((parts) => parts.apiTokens)?.apiTokens }),
    tls: config.http.tls ? readTLS(config.http.tls) : undefined,
  }));
  const server = buildServer(
    {
      options: {
        ...edgeOptions(config, prefix),
        refuseWrites: enabled.find((parts) => parts.refuseWrites)?.refuseWrites,
        withNamespace: enabled.find((parts) => parts.withNamespace)?.withNamespace,
      },
      blobs,
      uploads,
      manifests,
      tags,
      catalog: new Catalog(driver, { source: listingSource }),
      content,
      uploadState: new UploadStateSigner(secret),
      catalogCursors: new CatalogCursors(secret),
      urls: new URLBuilder({ host: config.http.host, prefix, relative: config.http.relativeurls }),
      events,
      pulls: enabled.find((parts) => parts.pulls)?.pulls,
      requestMetrics: enabled.find((parts) => parts.requestMetrics)?.requestMetrics,
      health: monitor,
      readiness: running.readiness,
      auth,
      pages: enabled.find((parts) => parts.pages)?.pages,
      browse: enabled.find((parts) => parts.browse)?.browse,
      pullGate: enabled.find((parts) => parts.pullGate)?.pullGate?.(content),
      audit,
      auditReads: enabled.find((parts) => parts.auditReads)?.auditReads,
      quotas: policies?.uploads,
    },
    logger,
    tls,
  );

  const app: App = {
    config,
    driver,
    server,
    logger,
    notifier,
    scheduler,
    async listen(address) {
      const { host, port } = address ?? parseAddr(config.http.addr);
      // Fastify's own listen() logs a line per interface; the banner below is the one line
      await server.ready();
      await bind(server.server, host, port, address ? 'the address given' : 'http.addr');
      const bound = server.server.address() as AddressInfo;
      const shownHost = bound.family === 'IPv6' ? `[${bound.address}]` : bound.address;
      const url = `${tls ? 'https' : 'http'}://${shownHost}:${bound.port}`;
      if ((options.worker?.index ?? 0) === 0) logger.info(bannerFields(config, url, options.configSource), 'berth is listening');
      const exposed = exposureWarning(config, bound.address);
      if (exposed) logger.warn(exposed);
      notifier.setListenPort(bound.port);
      for (const parts of enabled) {
        const listenerURL = await parts.listening?.(running);
        if (listenerURL) app.debugURL = listenerURL;
      }
      return url;
    },
    async close(graceMs = config.http.draintimeout) {
      await scheduler.close();
      // Node closes idle keep-alive connections only once, when close() starts: sweep again as
      // responses finish, so a connection that just became idle does not hold the shutdown
      // (an HTTP/2 server has neither method: its sessions end with server.close())
      const http1 = server.server as Partial<Pick<typeof server.server, 'closeIdleConnections' | 'closeAllConnections'>>;
      const sweep = setInterval(() => http1.closeIdleConnections?.call(server.server), 100);
      const cut = setTimeout(() => http1.closeAllConnections?.call(server.server), graceMs);
      try {
        await server.close();
      } finally {
        clearInterval(sweep);
        clearTimeout(cut);
      }
      // no request can emit any more: what is queued gets up to graceMs to be delivered
      await notifier.close(graceMs);
      for (const parts of [...enabled].reverse()) await parts.close?.();
      await auth.close();
      await driver.close?.();
    },
  };
  return app;
}

/** listens, or stops start-up with one line naming the key when the address cannot be had */
function bind(server: Server, host: string, port: number, key: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const refuse = (err: NodeJS.ErrnoException) => {
      const why: Record<string, string> = {
        EADDRINUSE: 'is already in use (another registry or program listens there)',
        EACCES: 'is not allowed for this user (ports below 1024 need privileges)',
        EADDRNOTAVAIL: 'is not an address of this machine',
      };
      const reason = err.code ? why[err.code] : undefined;
      reject(reason ? new ConfigError([`${key}: ${host}:${port} ${reason}`], key) : err);
    };
    server.once('error', refuse);
    server.listen(port, host, () => {
      server.off('error', refuse);
      resolve();
    });
  });
}

/** storage.cache.blobdescriptorsize: Distribution's 0 ("no limit") is a large bound here, an entry costs memory */
function cacheEntries(cache: Config['storage']['cache']): number {
  const size = cache?.blobdescriptorsize ?? DIRECTORY_CACHE_ENTRIES;
  return size === 0 ? 1_000_000 : size;
}


function edgeOptions(config: Config, prefix: string): EdgeOptions {
  return {
    readOnly: config.storage.maintenance.readonly.enabled,
    deletes: config.storage.delete.enabled,
    redirect: !config.storage.redirect.disable,
    pageMax: config.catalog.maxentries,
    prefix,
    includeReferences: config.notifications.events.includereferences,
    headers: config.http.headers,
    accessLog: !config.log.accesslog.disabled,
    limits: connectionLimits(config.http.limits),
  };
}

/** a problem with the files the configuration names (keys, certificates, htpasswd) is a configuration error */
async function atStartup<T>(fn: () => T | Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof ConfigError) throw err;
    throw new ConfigError([(err as Error).message], 'files named by the configuration');
  }
}

/** validation.manifests.urls as regular expressions (checked at start-up by the schema) */
function urlPolicy(config: Config): LayerURLPolicy {
  const { allow, deny } = config.validation.manifests.urls;
  return { allow: allow.map((p) => new RegExp(p)), deny: deny.map((p) => new RegExp(p)) };
}

