/**
 * Rate limiting (`ratelimit {rate, burst, by}`): a token bucket per client (IP address or user).
 * Each request takes one token when it starts; `rate` tokens per second flow back, up to `burst`.
 * An empty bucket answers 429 TOOMANYREQUESTS with Retry-After. Requests are only counted at their
 * start: the bytes of an upload or download in flight are never cut off.
 *
 * In memory, buckets are per process. With `redis` configured they live in Redis (one hash per
 * client, updated by one Lua script, timed by the Redis server's clock), so every instance draws
 * from the same bucket. When Redis cannot be reached the request is let through and a warning
 * logged: the limiter protects the registry, it must not take it down. The Redis limiter is in
 * ratelimit-redis.ts, loaded only when `redis` is configured (ioredis costs about 8 MiB of RSS).
 */

export type Verdict = { allowed: true } | { allowed: false; retryAfterSeconds: number };

export interface RateLimiter {
  take(key: string): Promise<Verdict>;
  /** whether `take` would be allowed now, taking nothing */
  peek(key: string): Promise<Verdict>;
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
    return this.draw(key, 1);
  }

  async peek(key: string): Promise<Verdict> {
    return this.draw(key, 0);
  }

  /** the verdict for one token, taking `cost` (0 or 1) of it when allowed */
  private draw(key: string, cost: number): Verdict {
    const { rate, burst } = this.options;
    const now = this.now() / 1000;
    const bucket = this.buckets.get(key) ?? { tokens: burst, at: now };
    bucket.tokens = Math.min(burst, bucket.tokens + Math.max(0, now - bucket.at) * rate);
    bucket.at = now;
    if (cost > 0) this.buckets.set(key, bucket);
    if (this.buckets.size > 10_000 && now - this.sweptAt > 1) this.sweep(now);
    if (bucket.tokens >= 1) {
      bucket.tokens -= cost;
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
