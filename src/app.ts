/**
 * The composition root: builds the storage driver, the registry core and the HTTP server from a
 * validated Config. Nothing else constructs these.
 *
 * What only some configurations use is imported here when the configuration asks for it, not at
 * start-up of every process: the S3 driver (the AWS SDK), the cloudfront middleware, the Redis rate
 * limiter (ioredis), the debug listener and its Prometheus metrics (prom-client). The modules
 * themselves import statically; everything else imports them as types only. Together they cost
 * about 15 MiB of RSS (docs/decisions.md, "Memory"); test/app/lazy-modules.test.ts guards this.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { ConfigError } from './config/load.js';
import type { Config } from './config/schema.js';
import { buildServer, type TLSOptions } from './http/server.js';
import { createAuth } from './auth/index.js';
import { UploadStateSigner } from './http/upload-state.js';
import { URLBuilder } from './http/urls.js';
import type { Metrics } from './debug/prometheus.js';
import type { DebugServer } from './debug/server.js';
import { createLogger } from './log.js';
import { Notifier } from './notifications/notifier.js';
import { BlobStore } from './registry/blobs.js';
import { Catalog } from './registry/catalog.js';
import { TagStore } from './registry/tags.js';
import { ManifestStore } from './registry/manifest-store.js';
import type { LayerURLPolicy } from './registry/manifests/index.js';
import { purgeUploads } from './registry/purge.js';
import { UploadSessions } from './registry/uploads.js';
import type { StorageDriver } from './storage/driver.js';
import { FilesystemDriver } from './storage/filesystem.js';
import { InMemoryDriver } from './storage/inmemory.js';

export interface App {
  config: Config;
  driver: StorageDriver;
  server: FastifyInstance;
  logger: Logger;
  /** the notification endpoints and their queues */
  notifier: Notifier;
  /** Prometheus metrics, when http.debug.prometheus.enabled */
  metrics?: Metrics;
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

export async function createDriver(storage: Config['storage'], logger?: Logger): Promise<StorageDriver> {
  if (storage.filesystem) return new FilesystemDriver({ rootdirectory: storage.filesystem.rootdirectory });
  if (storage.inmemory) return new InMemoryDriver();
  if (storage.s3) {
    const { S3Driver } = await import('./storage/s3.js');
    return new S3Driver({ ...storage.s3, redirectExpiryMs: storage.redirect.expiry, logger });
  }
  throw new Error('no storage driver configured'); // the schema makes this unreachable
}

/** the driver wrapped in the storage middleware of `middleware.storage`, in order */
export async function applyStorageMiddleware(driver: StorageDriver, config: Config, logger: Logger): Promise<StorageDriver> {
  if (config.middleware.storage.length === 0) return driver;
  const { CloudFrontMiddleware } = await import('./storage/middleware/cloudfront.js');
  return config.middleware.storage.reduce<StorageDriver>(
    (inner, entry, i) => new CloudFrontMiddleware(inner, entry.options, { logger, key: `middleware.storage.${i}.options` }),
    driver,
  );
}

export async function createApp(config: Config, options: { logger?: Logger; driver?: StorageDriver } = {}): Promise<App> {
  const logger = options.logger ?? createLogger(config.log);
  const metrics = config.http.debug?.prometheus.enabled ? new (await import('./debug/prometheus.js')).Metrics() : undefined;
  const baseDriver = options.driver ?? (await applyStorageMiddleware(await createDriver(config.storage, logger), config, logger));
  const driver = metrics ? new (await import('./debug/instrumented-driver.js')).InstrumentedDriver(baseDriver, metrics) : baseDriver;
  const notifier = new Notifier(config.notifications, logger);
  metrics?.watchNotifications(notifier);
  const blobs = new BlobStore(driver);
  const purging = config.storage.maintenance.uploadpurging;
  const uploads = new UploadSessions(driver, blobs, { maxAge: purging.enabled && !purging.dryrun ? purging.age : undefined });
  const tags = new TagStore(driver);
  const manifests = new ManifestStore(driver, blobs, tags, { urlPolicy: config.validation.disabled ? undefined : urlPolicy(config) });
  const secret = config.http.secret ?? randomSecret(logger);
  const authModules = config.ratelimit && config.redis ? { RedisRateLimiter: (await import('./auth/ratelimit-redis.js')).RedisRateLimiter } : {};
  // files named by the configuration (htpasswd, keys, certificates) are read now: a problem stops
  // start-up with the same kind of message as a bad key
  const { auth, tls } = atStartup(() => ({ auth: createAuth(config, logger, authModules), tls: config.http.tls ? readTLS(config.http.tls) : undefined }));
  const server = buildServer(
    {
      config,
      blobs,
      uploads,
      manifests,
      tags,
      catalog: new Catalog(driver),
      uploadState: new UploadStateSigner(secret),
      urls: new URLBuilder({ host: config.http.host, prefix: config.http.prefix ?? '/', relative: config.http.relativeurls }),
      events: notifier,
      requestMetrics: metrics,
      auth,
    },
    logger,
    tls,
  );
  const stopPurging = schedulePurging(config, driver, logger);

  let debugServer: DebugServer | undefined;

  const app: App = {
    config,
    driver,
    server,
    logger,
    notifier,
    metrics,
    async listen(address) {
      const { host, port } = address ?? parseAddr(config.http.addr);
      await driver.ready?.(); // e.g. the S3 bucket exists: fail at start, not on the first push
      await server.listen({ host, port });
      const bound = server.server.address() as AddressInfo;
      const shownHost = bound.family === 'IPv6' ? `[${bound.address}]` : bound.address;
      const url = `${tls ? 'https' : 'http'}://${shownHost}:${bound.port}`;
      logger.info({ addr: `${shownHost}:${bound.port}`, storage: driver.name }, 'listening');
      notifier.setListenPort(bound.port);
      const debug = config.http.debug;
      if (debug) {
        const { startDebugServer } = await import('./debug/server.js');
        debugServer = await startDebugServer(parseAddr(debug.addr), {
          driver,
          notifier,
          metrics: metrics && { instance: metrics, path: debug.prometheus.path },
          logger,
        });
        app.debugURL = debugServer.url;
      }
      return url;
    },
    async close(graceMs = config.http.draintimeout) {
      stopPurging();
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
      await debugServer?.close();
      await auth.close();
      await driver.close?.();
    },
  };
  return app;
}

function atStartup<T>(fn: () => T): T {
  try {
    return fn();
  } catch (err) {
    throw new ConfigError([(err as Error).message], 'files named by the configuration');
  }
}

/** http.tls: the files read at start-up (a missing file stops start-up with its key and path) */
function readTLS(tls: NonNullable<Config['http']['tls']>): TLSOptions {
  const read = (path: string, key: string) => {
    try {
      return readFileSync(path);
    } catch (err) {
      throw new Error(`cannot read ${key} ${path}: ${(err as Error).message}`);
    }
  };
  const ca = tls.clientcas?.map((path, i) => read(path, `http.tls.clientcas.${i}`));
  return {
    cert: read(tls.certificate, 'http.tls.certificate'),
    key: read(tls.key, 'http.tls.key'),
    minVersion: tls.minimumtls === 'tls1.3' ? 'TLSv1.3' : 'TLSv1.2',
    ...(ca && ca.length > 0 ? { ca, requestCert: true, rejectUnauthorized: true } : {}),
  };
}

/** validation.manifests.urls as regular expressions (checked at start-up by the schema) */
function urlPolicy(config: Config): LayerURLPolicy {
  const { allow, deny } = config.validation.manifests.urls;
  return { allow: allow.map((p) => new RegExp(p)), deny: deny.map((p) => new RegExp(p)) };
}

/** ':5000' listens on every interface, as Go's listeners do */
export function parseAddr(addr: string): { host: string; port: number } {
  const colon = addr.lastIndexOf(':');
  const host = addr.slice(0, colon).replace(/^\[|\]$/g, '');
  return { host: host === '' ? '::' : host, port: Number(addr.slice(colon + 1)) };
}

function randomSecret(logger: Logger): string {
  logger.warn('http.secret is not set: a random one is used, so upload URLs are valid for this process only; several instances behind one load balancer need one shared http.secret');
  return randomBytes(32).toString('base64url');
}

function schedulePurging(config: Config, driver: StorageDriver, logger: Logger): () => void {
  const { enabled, age, interval, dryrun } = config.storage.maintenance.uploadpurging;
  if (!enabled || config.storage.maintenance.readonly.enabled) return () => {};
  const run = async () => {
    try {
      const result = await purgeUploads(driver, new Date(Date.now() - age), dryrun);
      if (result.purged.length > 0 || result.errors.length > 0) {
        logger.info({ purged: result.purged.length, errors: result.errors, dryRun: dryrun }, 'purged old uploads');
      }
    } catch (err) {
      logger.error({ err }, 'upload purge failed');
    }
  };
  const timer = setInterval(run, interval);
  timer.unref();
  const first = setTimeout(run, Math.min(interval, 60_000));
  first.unref();
  return () => {
    clearInterval(timer);
    clearTimeout(first);
  };
}
