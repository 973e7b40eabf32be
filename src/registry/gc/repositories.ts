/**
 * Every repository directory under `repositories/`, depth first in name order: those with
 * `_manifests` (known repositories, as the catalog lists them) and also those holding only
 * `_layers` links (blobs pushed, no manifest yet), whose links a collection cleans up as well.
 */
import { unlessMissing, type StorageDriver } from '../../storage/driver.js';
import { REPOSITORIES } from '../layout.js';

export async function* repositoryNames(driver: StorageDriver, prefix = ''): AsyncGenerator<string> {
  const dir = prefix === '' ? REPOSITORIES : `${REPOSITORIES}/${prefix}`;
  const names = (await unlessMissing(driver.listNames(dir))) ?? [];
  if (prefix !== '' && (names.includes('_manifests') || names.includes('_layers'))) yield prefix;
  for (const name of names) {
    // `_manifests`, `_layers` and `_uploads` are a repository's own; nested names never start with '_'
    if (!name.startsWith('_')) yield* repositoryNames(driver, prefix === '' ? name : `${prefix}/${name}`);
  }
}
