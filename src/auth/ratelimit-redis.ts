/**
 * The token buckets of ratelimit.ts kept in Redis (`redis` configured): one hash per client, updated
 * by one Lua script, timed by the Redis server's clock, so every instance draws from the same
 * bucket. When Redis cannot be reached the request is let through and a warning logged.
 * Loaded by the composition root only when `redis` is configured.
 */
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { connectRedis, type RedisOptions } from '../redis-client.js';
import type { BucketOptions, RateLimiter, Verdict } from './ratelimit.js';

const BUCKET_SCRIPT = `
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local v = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(v[1]) or burst
local at = tonumber(v[2]) or now
tokens = math.min(burst, tokens + math.max(0, now - at) * rate)
local allowed = 0
local wait = 0
if tokens >= 1 then
  tokens = tokens - cost
  allowed = 1
else
  wait = (1 - tokens) / rate
end
if cost > 0 then
  redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
  redis.call('PEXPIRE', KEYS[1], math.ceil(burst / rate * 1000) + 1000)
end
return {allowed, tostring(wait)}
`;

export class RedisRateLimiter implements RateLimiter {
  private readonly redis: Redis;
  private warnedAt = 0;

  constructor(
    private readonly options: BucketOptions,
    redis: RedisOptions,
    private readonly logger: Logger,
    private readonly prefix = 'berth:ratelimit:',
  ) {
    this.redis = connectRedis(redis, true);
    this.redis.on('error', (err) => this.warn(err));
    this.redis.defineCommand('berthBucket', { numberOfKeys: 1, lua: BUCKET_SCRIPT });
  }

  take(key: string): Promise<Verdict> {
    return this.draw(key, 1);
  }

  peek(key: string): Promise<Verdict> {
    return this.draw(key, 0);
  }

  /** the verdict for one token, taking `cost` (0 or 1) of it when allowed */
  private async draw(key: string, cost: number): Promise<Verdict> {
    try {
      const [allowed, wait] = (await (this.redis as unknown as { berthBucket(k: string, r: number, b: number, c: number): Promise<[number, string]> }).berthBucket(
        this.prefix + key,
        this.options.rate,
        this.options.burst,
        cost,
      )) as [number, string];
      if (allowed === 1) return { allowed: true };
      return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil(Number(wait))) };
    } catch (err) {
      this.warn(err as Error);
      return { allowed: true };
    }
  }

  private warn(err: Error): void {
    const now = Date.now();
    if (now - this.warnedAt < 10_000) return;
    this.warnedAt = now;
    this.logger.warn({ err: err.message }, 'rate limiter: Redis unavailable, requests are not limited until it is back');
  }

  async close(): Promise<void> {
    this.redis.disconnect();
  }
}
