/** Read-only mode and disabled deletes (spec 3.2): writes are refused with 405 UNSUPPORTED. */
import { RegistryError } from '../../registry/errors.js';
import type { EdgeOptions } from '../options.js';

export function checkWritable(options: EdgeOptions, name: string): void {
  const refused = options.refuseWrites?.(name);
  if (refused) throw new RegistryError('UNSUPPORTED', refused);
  if (options.readOnly) {
    throw new RegistryError('UNSUPPORTED', 'the registry is in read-only mode (storage.maintenance.readonly.enabled): pushes and deletes are refused');
  }
}

export function checkDeletable(options: EdgeOptions, name: string): void {
  checkWritable(options, name);
  if (!options.deletes) {
    throw new RegistryError('UNSUPPORTED', 'deletes are disabled on this registry (storage.delete.enabled is false)');
  }
}
