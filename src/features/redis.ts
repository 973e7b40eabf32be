/** Rate-limit buckets in Redis (ratelimit with redis), shared by every instance; ioredis is loaded only then. */
import { readFile } from 'node:fs/promises';
import { ConfigError } from '../config/errors.js';
import type { Feature } from './feature.js';

interface RedisConfig {
  ratelimit?: unknown;
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
  enabled: (config) => config.ratelimit !== undefined && config.redis !== undefined,
  async load(config, { logger }) {
    const { RedisRateLimiter } = await import('../auth/ratelimit-redis.js');
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
    return { rateLimiter: (bucket) => new RedisRateLimiter(bucket, server, logger) };
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
