/**
 * Rate limiting (`ratelimit {rate, burst, by}`): a token bucket per client (IP address or user).
 * Each request takes one token when it starts; `rate` tokens per second flow back, up to `burst`.
 * An empty bucket answers 429 TOOMANYREQUESTS with Retry-After. Requests are only counted at their
 * start: the bytes of an upload or download in flight are never cut off.
 *
 * In memory, buckets are per process. With `redis` configured they live in Redis (one hash per
 * client, updated by one Lua script, timed by the Redis server's clock), so every instance draws
 * from the same bucket. When Redis cannot be reached the request is let through and a warning
 * logged: the limiter protects the registry, it must not take it down.
 */
import { Redis } from 'ioredis';
import type { Logger } from 'pino';

export type Verdict = { allowed: true } | { allowed: false; retryAfterSeconds: number };

export interface RateLimiter {
  take(key: string): Promise<Verdict>;
  close(): Promise<void>;
}

export interface BucketOptions {
  /** tokens per second */
  rate: number;
  burst: number;
}

export class MemoryRateLimiter implements RateLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();
  private sweptAt = 0;

  constructor(
    private readonly options: BucketOptions,
    private readonly now: () => number = () => performance.now(),
  ) {}

  async take(key: string): Promise<Verdict> {
    const { rate, burst } = this.options;
    const now = this.now() / 1000;
    const bucket = this.buckets.get(key) ?? { tokens: burst, at: now };
    bucket.tokens = Math.min(burst, bucket.tokens + Math.max(0, now - bucket.at) * rate);
    bucket.at = now;
    this.buckets.set(key, bucket);
    if (this.buckets.size > 10_000 && now - this.sweptAt > 1) this.sweep(now);
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return { allowed: true };
    }
    return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil((1 - bucket.tokens) / rate)) };
  }

  /** forget buckets that have refilled: they are the same as new ones */
  private sweep(now: number): void {
    this.sweptAt = now;
    const { rate, burst } = this.options;
    for (const [key, b] of this.buckets) if (b.tokens + (now - b.at) * rate >= burst) this.buckets.delete(key);
  }

  async close(): Promise<void> {}
}

const BUCKET_SCRIPT = `
local rate = tonumber(ARGV[1])
local burst = tonumber(ARGV[2])
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local v = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(v[1]) or burst
local at = tonumber(v[2]) or now
tokens = math.min(burst, tokens + math.max(0, now - at) * rate)
local allowed = 0
local wait = 0
if tokens >= 1 then
  tokens = tokens - 1
  allowed = 1
else
  wait = (1 - tokens) / rate
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(burst / rate * 1000) + 1000)
return {allowed, tostring(wait)}
`;

export interface RedisOptions {
  host: string;
  port: number;
  username?: string;
  password?: string;
  db: number;
  connectTimeoutMs: number;
  commandTimeoutMs: number;
}

export class RedisRateLimiter implements RateLimiter {
  private readonly redis: Redis;
  private warnedAt = 0;

  constructor(
    private readonly options: BucketOptions,
    redis: RedisOptions,
    private readonly logger: Logger,
    private readonly prefix = 'berth:ratelimit:',
  ) {
    this.redis = new Redis({
      host: redis.host,
      port: redis.port,
      username: redis.username,
      password: redis.password,
      db: redis.db,
      connectTimeout: redis.connectTimeoutMs,
      commandTimeout: redis.commandTimeoutMs,
      maxRetriesPerRequest: 1,
      enableOfflineQueue: true,
      lazyConnect: false,
    });
    this.redis.on('error', (err) => this.warn(err));
    this.redis.defineCommand('berthBucket', { numberOfKeys: 1, lua: BUCKET_SCRIPT });
  }

  async take(key: string): Promise<Verdict> {
    try {
      const [allowed, wait] = (await (this.redis as unknown as { berthBucket(k: string, r: number, b: number): Promise<[number, string]> }).berthBucket(
        this.prefix + key,
        this.options.rate,
        this.options.burst,
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
