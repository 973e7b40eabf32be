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
/**
 * on a driver with inspectDirectories (the filesystem), the directories listed in one call (on its
 * worker threads), one call ahead: a listing through libuv's pool is a hand-off, a wake-up and a
 * promise on the main thread per repository, 100,000 of them for a pass of the reconciler
 */
const LISTINGS_PER_CALL = 256;

/** the names in each of these directories (relative to `repositories/`), in order; a missing one has none */
type Lister = (prefixes: string[]) => Promise<string[][]>;

export async function* repositoryNames(driver: StorageDriver, prefix = ''): AsyncGenerator<string> {
  const inspect = driver.inspectDirectories?.bind(driver);
  const lister: Lister = inspect
    ? async (prefixes) => (await inspect(prefixes.map((p) => ({ path: directory(p), names: true })))).map((facts) => (facts.exists && facts.names) || [])
    : async ([one]) => [(await unlessMissing(driver.listNames(directory(one)))) ?? []];
  const [names] = await lister([prefix]);
  yield* walk(lister, inspect ? LISTINGS_PER_CALL : 1, prefix, names);
}

async function* walk(lister: Lister, perCall: number, prefix: string, names: string[]): AsyncGenerator<string> {
  if (prefix !== '' && (names.includes('_manifests') || names.includes('_layers'))) yield prefix;
  // `_manifests`, `_layers` and `_uploads` are a repository's own; nested names never start with '_'
  const children = names.filter((name) => !name.startsWith('_')).map((name) => (prefix === '' ? name : `${prefix}/${name}`));
  const calls: string[][] = [];
  for (let i = 0; i < children.length; i += perCall) calls.push(children.slice(i, i + perCall));
  // one call of many directories keeps one more in flight; a call per directory keeps LISTINGS_AHEAD
  const listings = inOrderAhead(calls, perCall > 1 ? 2 : LISTINGS_AHEAD, async (call) => ({ call, names: await lister(call) }));
  for await (const { call, names: each } of listings) {
    for (let i = 0; i < call.length; i++) yield* walk(lister, perCall, call[i], each[i]);
  }
}

function directory(prefix: string): string {
  return prefix === '' ? REPOSITORIES : `${REPOSITORIES}/${prefix}`;
}
