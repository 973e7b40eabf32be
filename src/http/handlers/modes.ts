/** Read-only mode and disabled deletes (spec 3.2): writes are refused with 405 UNSUPPORTED. */
import { RegistryError } from '../../registry/errors.js';
import type { EdgeOptions } from '../options.js';

export function checkWritable(options: EdgeOptions): void {
  if (options.refuseWrites) throw new RegistryError('UNSUPPORTED', options.refuseWrites);
  if (options.readOnly) {
    throw new RegistryError('UNSUPPORTED', 'the registry is in read-only mode (storage.maintenance.readonly.enabled): pushes and deletes are refused');
  }
}

export function checkDeletable(options: EdgeOptions): void {
  checkWritable(options);
  if (!options.deletes) {
    throw new RegistryError('UNSUPPORTED', 'deletes are disabled on this registry (storage.delete.enabled is false)');
  }
}
