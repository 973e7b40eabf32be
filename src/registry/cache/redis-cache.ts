/**
 * The shared second level of the metadata cache in Redis (`storage.cache.blobdescriptor: redis`):
 * plain keys under `berth:cache:`, each expiring a day after it was last written (entries of old
 * tokens are never read again; what is still used is written again after a miss). Commands are
 * not queued while Redis is unreachable: a request then reads storage, as without the cache, and
 * a warning is logged at most once a minute. Loaded by features/redis.ts only when configured.
 */
import type { Redis } from 'ioredis';
import type { Logger } from 'pino';
import { connectRedis, type RedisOptions } from '../../redis-client.js';
import type { SharedCache } from './shared-cache.js';

const PREFIX = 'berth:cache:';
const TTL_SECONDS = 24 * 3600;
const WARN_EVERY_MS = 60_000;

export class RedisSharedCache implements SharedCache {
  private readonly redis: Redis;
  private warnedAt = 0;

  constructor(
    server: RedisOptions,
    private readonly logger: Logger,
  ) {
    this.redis = connectRedis(server, false); // unreachable: miss at once, do not wait for a reconnection
    this.redis.on('error', (err) => this.warn(err));
  }

  async get(key: string): Promise<Buffer | undefined> {
    try {
      return (await this.redis.getBuffer(PREFIX + key)) ?? undefined;
    } catch (err) {
      this.warn(err);
      return undefined;
    }
  }

  set(key: string, value: Buffer): void {
    this.redis.set(PREFIX + key, value, 'EX', TTL_SECONDS).catch((err: unknown) => this.warn(err));
  }

  async close(): Promise<void> {
    await this.redis.quit().catch(() => this.redis.disconnect());
  }

  private warn(err: unknown): void {
    const now = Date.now();
    if (now - this.warnedAt < WARN_EVERY_MS) return;
    this.warnedAt = now;
    this.logger.warn({ err: (err as Error)?.message ?? String(err) }, 'metadata cache: Redis unreachable; reading storage instead');
  }
}
