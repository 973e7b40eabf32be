/**
 * The one way berth connects to the Redis server of the `redis` block: the rate limiter's buckets
 * and the metadata cache's shared level each open a client with these options. Imported only by
 * modules that are themselves loaded only when Redis is configured (ioredis costs memory).
 */
import { Redis } from 'ioredis';

export interface RedisOptions {
  host: string;
  port: number;
  username?: string;
  password?: string;
  db: number;
  connectTimeoutMs: number;
  commandTimeoutMs: number;
  /** shown by CLIENT LIST */
  clientName?: string;
  /** TLS to the server: CAs (default: the system's) and a client certificate */
  tls?: { ca?: Buffer[]; cert?: Buffer; key?: Buffer };
}

/** a client; `queueWhileOffline`: commands wait for a (re)connection instead of failing at once */
export function connectRedis(server: RedisOptions, queueWhileOffline: boolean): Redis {
  return new Redis({
    host: server.host,
    port: server.port,
    username: server.username,
    password: server.password,
    db: server.db,
    connectionName: server.clientName,
    tls: server.tls,
    connectTimeout: server.connectTimeoutMs,
    commandTimeout: server.commandTimeoutMs,
    maxRetriesPerRequest: 1,
    enableOfflineQueue: queueWhileOffline,
  });
}
