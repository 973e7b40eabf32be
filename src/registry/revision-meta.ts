/**
 * berth's record beside a manifest revision (layout.manifestRevisionMeta, berth.json): the media
 * type it was pushed with and, for a signed first-generation manifest, the digest of the bytes as
 * pushed, and when it was last pushed. The manifest store writes and serves by it; garbage collection
 * keeps the signed bytes it names; retention and the cache's expiry read the push time (activity.ts).
 */
import { unlessMissing, type StorageDriver } from '../storage/driver.js';
import type { Digest } from './digest.js';
import * as layout from './layout.js';

export interface RevisionMeta {
  mediaType: string;
  /** signed first generation: digest of the signed bytes as pushed (the revision's digest covers the payload only) */
  signed?: Digest;
  /** when the manifest was last pushed (or fetched into the pull-through cache), ISO 8601; absent before berth recorded it */
  pushed?: string;
}

export async function writeRevisionMeta(driver: StorageDriver, name: string, digest: Digest, meta: RevisionMeta): Promise<void> {
  await driver.putContent(layout.manifestRevisionMeta(name, digest), Buffer.from(JSON.stringify(meta)));
}

/** the record, or undefined for a revision without one (written by Distribution); malformed JSON throws */
export async function readRevisionMeta(driver: StorageDriver, name: string, digest: Digest): Promise<RevisionMeta | undefined> {
  const content = await unlessMissing(driver.getContent(layout.manifestRevisionMeta(name, digest)));
  return content && (JSON.parse(content.toString()) as RevisionMeta);
}
