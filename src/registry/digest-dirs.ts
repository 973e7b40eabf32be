/**
 * Directories named by digest: Distribution's layout keeps one directory per algorithm (blobs/,
 * `_layers`, revisions, tag indexes, berth's referrers index), each holding one directory per
 * digest hex. Whatever walks them walks every algorithm berth knows, here.
 */
import { unlessMissing, type FileInfo, type StorageDriver } from '../storage/driver.js';
import { ALGORITHMS, digestOf, isAlgorithm, type Algorithm, type Digest } from './digest.js';
import * as layout from './layout.js';
import { forEach, inOrderAhead } from './pool.js';

export interface DigestListing {
  digests: Digest[];
  /** paths of the entries whose name is no digest hex of their algorithm */
  strays: string[];
}

/**
 * the digests named under `dirOf(algorithm)`, for every algorithm. The algorithms' directories
 * are siblings (`<parent>/<algorithm>`): the parent is listed first and only the algorithms found
 * there after it, so a missing directory costs one call and a sha256-only one two.
 */
export async function listDigests(driver: StorageDriver, dirOf: (algorithm: Algorithm) => string): Promise<DigestListing> {
  const listing: DigestListing = { digests: [], strays: [] };
  const parent = dirOf('sha256').slice(0, -'/sha256'.length);
  const present = ((await unlessMissing(driver.listNames(parent))) ?? []).filter(isAlgorithm);
  const perAlgorithm = await Promise.all(present.map(async (algorithm) => ({ algorithm, names: (await unlessMissing(driver.listNames(dirOf(algorithm)))) ?? [] })));
  for (const { algorithm, names } of perAlgorithm) {
    for (const hex of names) {
      const digest = digestOf(algorithm, hex);
      if (digest) listing.digests.push(digest);
      else listing.strays.push(`${dirOf(algorithm)}/${hex}`);
    }
  }
  return listing;
}

/**
 * Calls `visit` for every digest under blobs/ that `skip` does not name (storedBlobs, with the
 * listings of 4 prefix directories in flight and 4 × `reads` visits). A directory is named, not
 * checked: the visitor stats its data.
 */
export async function forEachStoredBlob(driver: StorageDriver, skip: (digest: Digest) => boolean, reads: number, visit: (digest: Digest) => Promise<void>): Promise<void> {
  await forEach(storedBlobs(driver, skip, 4), 4 * reads, visit);
}

/**
 * The digests under blobs/ that `skip` does not name, prefix directory by prefix directory, with
 * the listings of the next `listingsAhead` directories started while one is handed out: a consumer
 * that runs its own bounded pool of visits (online collection) keeps them busy across directories
 * of a few candidates each, and the round trips of the listings overlap.
 */
export async function* storedBlobs(driver: StorageDriver, skip: (digest: Digest) => boolean, listingsAhead: number): AsyncGenerator<Digest> {
  for (const algorithm of ALGORITHMS) {
    const prefixes = (await unlessMissing(driver.listNames(layout.blobsDir(algorithm)))) ?? [];
    const listings = inOrderAhead(prefixes, listingsAhead, async (prefix) => (await unlessMissing(driver.listNames(layout.blobPrefixDir(algorithm, prefix)))) ?? []);
    for await (const names of listings) {
      for (const hex of names) {
        const digest = digestOf(algorithm, hex);
        if (digest !== undefined && !skip(digest)) yield digest;
      }
    }
  }
}

/** a blob under blobs/, with its data's size and time when the listing told them */
export interface StoredBlob {
  digest: Digest;
  data?: FileInfo;
}

/**
 * storedBlobs, where the driver lists files with their times (listFiles; on S3 the same number of
 * listings, a key per blob where a delimited listing gives a prefix per blob): each blob comes with
 * its data, so a visitor needs no stat of it. Elsewhere the names alone, as storedBlobs gives them.
 */
export async function* storedBlobData(driver: StorageDriver, skip: (digest: Digest) => boolean, listingsAhead: number): AsyncGenerator<StoredBlob> {
  if (!driver.listFiles) {
    for await (const digest of storedBlobs(driver, skip, listingsAhead)) yield { digest };
    return;
  }
  for (const algorithm of ALGORITHMS) {
    const prefixes = (await unlessMissing(driver.listNames(layout.blobsDir(algorithm)))) ?? [];
    const listings = inOrderAhead(prefixes, listingsAhead, async (prefix) => ({ dir: layout.blobPrefixDir(algorithm, prefix), files: await driver.listFiles!(layout.blobPrefixDir(algorithm, prefix)) }));
    for await (const { dir, files } of listings) {
      for (const data of files) {
        const [hex, name, ...deeper] = data.path.slice(dir.length + 1).split('/');
        const digest = name === 'data' && deeper.length === 0 ? digestOf(algorithm, hex) : undefined;
        if (digest !== undefined && !skip(digest)) yield { digest, data };
      }
    }
  }
}
