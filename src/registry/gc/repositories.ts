/**
 * Every repository directory under `repositories/`, depth first in name order: those with
 * `_manifests` (known repositories, as the catalog lists them) and also those holding only
 * `_layers` links (blobs pushed, no manifest yet), whose links a collection cleans up as well.
 */
import { unlessMissing, type StorageDriver } from '../../storage/driver.js';
import { REPOSITORIES } from '../layout.js';
import { inOrderAhead } from '../pool.js';

/**
 * listings of the next directories started while the walk is in one: without them a walk of a
 * thousand repositories on S3 waits on a thousand round trips one after another (per level of
 * nesting, so a walk keeps at most this many per level in flight)
 */
const LISTINGS_AHEAD = 8;

export async function* repositoryNames(driver: StorageDriver, prefix = ''): AsyncGenerator<string> {
  yield* walk(driver, prefix, await listing(driver, prefix));
}

async function* walk(driver: StorageDriver, prefix: string, names: string[]): AsyncGenerator<string> {
  if (prefix !== '' && (names.includes('_manifests') || names.includes('_layers'))) yield prefix;
  // `_manifests`, `_layers` and `_uploads` are a repository's own; nested names never start with '_'
  const children = names.filter((name) => !name.startsWith('_')).map((name) => (prefix === '' ? name : `${prefix}/${name}`));
  const listings = inOrderAhead(children, LISTINGS_AHEAD, async (child) => ({ child, names: await listing(driver, child) }));
  for await (const { child, names: childNames } of listings) yield* walk(driver, child, childNames);
}

async function listing(driver: StorageDriver, prefix: string): Promise<string[]> {
  return (await unlessMissing(driver.listNames(prefix === '' ? REPOSITORIES : `${REPOSITORIES}/${prefix}`))) ?? [];
}
