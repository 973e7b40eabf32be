/** The storage a maintenance command works on. */
import { ConfigError } from '../config/errors.js';
import type { Config } from '../config/schema.js';
import { configuredDriver } from '../features/storage.js';
import type { StorageDriver } from '../storage/driver.js';

/** the configured storage backend, without middleware (a collection or purge needs no redirects); `options` as configuredDriver's */
export async function commandDriver(config: Config, options: { blocking?: boolean } = {}): Promise<StorageDriver> {
  if (config.storage.inmemory) {
    throw new ConfigError(['storage: this command needs filesystem or s3 storage (in-memory storage ends with its process)'], 'storage');
  }
  // the logger (pino) only for S3, the one driver that logs: a filesystem command never loads it
  const logger = config.storage.s3 ? (await import('../log.js')).createLogger(config.log, process.stderr) : undefined;
  return configuredDriver(config, logger, options);
}
