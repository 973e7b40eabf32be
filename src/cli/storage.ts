/** The storage a maintenance command works on. */
import { ConfigError } from '../config/errors.js';
import type { Config } from '../config/schema.js';
import { configuredDriver } from '../features/storage.js';
import { createLogger } from '../log.js';
import type { StorageDriver } from '../storage/driver.js';

/** the configured storage backend, without middleware (a collection or purge needs no redirects) */
export async function commandDriver(config: Config): Promise<StorageDriver> {
  if (config.storage.inmemory) {
    throw new ConfigError(['storage: this command needs filesystem or s3 storage (in-memory storage ends with its process)'], 'storage');
  }
  return configuredDriver(config, createLogger(config.log, process.stderr));
}
