/**
 * The configured storage backend, built in this one place for the server (app.ts) and the
 * maintenance commands (src/cli/): filesystem, inmemory or s3. The AWS SDK is loaded only when s3
 * is configured, so a registry on a filesystem never loads it.
 */
import type { Logger } from 'pino';
import type { StorageDriver } from '../storage/driver.js';
import { FilesystemDriver } from '../storage/filesystem.js';
import { InMemoryDriver } from '../storage/inmemory.js';
import type { S3Parameters } from '../storage/s3/driver.js';

interface StorageConfig {
  storage: { filesystem?: { rootdirectory: string }; inmemory?: unknown; s3?: S3Parameters; redirect: { expiry: number } };
}

/**
 * the driver without middleware: the storage features (features/index.ts) wrap it.
 * `blocking`: a command that has its process to itself (the offline garbage collection) gets the
 * filesystem's synchronous reads (storage/filesystem-blocking.ts); never the server.
 */
export async function configuredDriver(config: StorageConfig, logger?: Logger, options: { blocking?: boolean } = {}): Promise<StorageDriver> {
  const { storage } = config;
  if (storage.s3) {
    // the SDK warns on Node 20 that its releases after January 2027 need Node 22; the lock file
    // pins one that runs on 20, so the warning says nothing the operator can act on here
    // (docs/decisions.md, "Node 20"); an operator can still set the variable to false
    process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
    const { S3Driver } = await import('../storage/s3/driver.js');
    return new S3Driver({ ...storage.s3, redirectExpiryMs: storage.redirect.expiry, logger });
  }
  if (storage.filesystem && options.blocking) {
    const { BlockingFilesystemDriver } = await import('../storage/filesystem-blocking.js');
    return new BlockingFilesystemDriver({ rootdirectory: storage.filesystem.rootdirectory });
  }
  if (storage.filesystem) return new FilesystemDriver({ rootdirectory: storage.filesystem.rootdirectory });
  if (storage.inmemory) return new InMemoryDriver();
  throw new Error('no storage driver configured'); // the configuration schema makes this unreachable
}
