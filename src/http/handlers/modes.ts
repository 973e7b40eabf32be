/** Read-only mode and disabled deletes (spec 3.2): writes are refused with 405 UNSUPPORTED. */
import type { Config } from '../../config/schema.js';
import { RegistryError } from '../../registry/errors.js';

export function checkWritable(config: Config): void {
  if (config.storage.maintenance.readonly.enabled) {
    throw new RegistryError('UNSUPPORTED', 'the registry is in read-only mode (storage.maintenance.readonly.enabled): pushes and deletes are refused');
  }
}

export function checkDeletable(config: Config): void {
  checkWritable(config);
  if (!config.storage.delete.enabled) {
    throw new RegistryError('UNSUPPORTED', 'deletes are disabled on this registry (storage.delete.enabled is false)');
  }
}
