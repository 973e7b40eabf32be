/**
 * Redis, shared by every instance: rate-limit buckets (ratelimit with redis) and the metadata
 * cache's second level (storage.cache.blobdescriptor: redis); ioredis is loaded only then.
 */
import { readFile } from 'node:fs/promises';
import { ConfigError } from '../config/errors.js';
import type { Feature, FeatureParts } from './feature.js';

interface RedisConfig {
  ratelimit?: unknown;
  storage: { cache?: { blobdescriptor?: 'inmemory' | 'redis' } };
  redis?: {
    addr: string;
    clientname?: string;
    username?: string;
    password?: string;
    db: number;
    dialtimeout: number;
    readtimeout: number;
    tls?: { enabled?: boolean; certificate?: string; key?: string; rootcas?: string[] };
  };
}

export const redisFeature: Feature<RedisConfig> = {
  name: 'redis',
  enabled: (config) => config.redis !== undefined && (config.ratelimit !== undefined || config.storage.cache?.blobdescriptor === 'redis'),
  async load(config, { logger }) {
    const { addr, clientname, username, password, db, dialtimeout, readtimeout, tls } = config.redis!;
    const colon = addr.lastIndexOf(':');
    const server = {
      host: addr.slice(0, colon).replace(/^\[|\]$/g, '') || '127.0.0.1',
      port: Number(addr.slice(colon + 1)),
      clientName: clientname,
      username,
      password,
      db,
      connectTimeoutMs: dialtimeout,
      commandTimeoutMs: readtimeout,
      tls: tls && tls.enabled !== false ? await tlsFiles(tls) : undefined,
    };
    const parts: FeatureParts = {};
    if (config.ratelimit !== undefined) {
      const { RedisRateLimiter } = await import('../auth/ratelimit-redis.js');
      parts.rateLimiter = (bucket) => new RedisRateLimiter(bucket, server, logger);
    }
    if (config.storage.cache?.blobdescriptor === 'redis') {
      const { RedisSharedCache } = await import('../registry/cache/redis-cache.js');
      const cache = new RedisSharedCache(server, logger);
      parts.sharedCache = cache;
      parts.close = () => cache.close();
    }
    return parts;
  },
};

/** redis.tls's files, read at start: a missing one stops start-up naming its key */
async function tlsFiles(tls: NonNullable<NonNullable<RedisConfig['redis']>['tls']>): Promise<{ ca?: Buffer[]; cert?: Buffer; key?: Buffer }> {
  const read = (path: string, key: string) =>
    readFile(path).catch((err: Error) => {
      throw new ConfigError([`redis.tls.${key}: cannot read ${path}: ${err.message}`], 'redis.tls');
    });
  return {
    ca: tls.rootcas && (await Promise.all(tls.rootcas.map((path) => read(path, 'rootcas')))),
    cert: tls.certificate ? await read(tls.certificate, 'certificate') : undefined,
    key: tls.key ? await read(tls.key, 'key') : undefined,
  };
}
