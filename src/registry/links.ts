/**
 * Link files, the one home of their format: a `link` holds the digest of what it points at and
 * nothing else (no newline), as Distribution writes them. A repository's layer links, manifest
 * revision links and tag links (current and index) are all read and written here; which path
 * each one has is layout.ts's business, what they mean the stores'.
 */
import { unlessMissing, type StorageDriver } from '../storage/driver.js';
import { isDigest, type Digest } from './digest.js';

/** the digest a link points at; undefined when there is no link (or it holds no digest berth knows) */
export async function readLink(driver: StorageDriver, path: string): Promise<Digest | undefined> {
  return linkDigest(await unlessMissing(driver.getContent(path)));
}

/** the digest a link's content names; undefined for none (or no digest berth knows) */
export function linkDigest(content: Buffer | undefined): Digest | undefined {
  // trimmed: a link edited by hand may end with a newline
  const text = content?.toString().trim();
  return text !== undefined && isDigest(text) ? text : undefined;
}

/** true when the link at `path` exists and points at `digest` */
export async function linksTo(driver: StorageDriver, path: string, digest: Digest): Promise<boolean> {
  return (await readLink(driver, path)) === digest;
}

export async function writeLink(driver: StorageDriver, path: string, digest: Digest): Promise<void> {
  await driver.putContent(path, linkContent(digest));
}

/** the content of a link to `digest` */
export function linkContent(digest: Digest): Buffer {
  return Buffer.from(digest);
}
