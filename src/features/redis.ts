/** Rate-limit buckets in Redis (ratelimit with redis), shared by every instance; ioredis is loaded only then. */
import type { Feature } from './feature.js';

interface RedisConfig {
  ratelimit?: unknown;
  redis?: { addr: string; username?: string; password?: string; db: number; dialtimeout: number; readtimeout: number };
}

export const redisFeature: Feature<RedisConfig> = {
  name: 'redis',
  enabled: (config) => config.ratelimit !== undefined && config.redis !== undefined,
  async load(config, { logger }) {
    const { RedisRateLimiter } = await import('../auth/ratelimit-redis.js');
    const { addr, username, password, db, dialtimeout, readtimeout } = config.redis!;
    const colon = addr.lastIndexOf(':');
    const server = {
      host: addr.slice(0, colon).replace(/^\[|\]$/g, '') || '127.0.0.1',
      port: Number(addr.slice(colon + 1)),
      username,
      password,
      db,
      connectTimeoutMs: dialtimeout,
      commandTimeoutMs: readtimeout,
    };
    return { rateLimiter: (bucket) => new RedisRateLimiter(bucket, server, logger) };
  },
};
