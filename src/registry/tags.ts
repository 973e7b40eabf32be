/**
 * Tag listing (spec 4.2): the tags of a repository are the directories under
 * `_manifests/tags/` (the layout of section 3 of DESIGN.md, as Distribution stores them).
 *
 * Which repositories are known: see repositories.ts.
 * - No `_manifests` directory (never pushed, or only blobs pushed or being uploaded) -> NAME_UNKNOWN.
 *   Distribution 2.8.2 answers NAME_UNKNOWN for these too.
 * - `_manifests` but no tags (pushed by digest only, or every tag deleted) -> []. Distribution
 *   answers NAME_UNKNOWN when the `tags` directory is missing and [] when it is empty, which
 *   depends on the driver (object stores and the in-memory driver drop empty directories, the
 *   filesystem keeps them); berth gives the same answer on every driver.
 */
import { unlessMissing, type StorageDriver } from '../storage/driver.js';
import * as layout from '../storage/layout.js';
import { checkRepository } from './repositories.js';

export class TagStore {
  constructor(private readonly driver: StorageDriver) {}

  /** the tag names of `name`, sorted by code unit (tags are ASCII and have no '/') */
  async list(name: string): Promise<string[]> {
    await checkRepository(this.driver, name);
    const paths = (await unlessMissing(this.driver.list(layout.tagsDir(name)))) ?? [];
    const tags = paths.map((p) => p.slice(p.lastIndexOf('/') + 1));
    // drivers list sorted already; sort again so the order never depends on one
    return tags.sort(compareCodeUnits);
  }
}

/** plain UTF-16 code unit order (what Array.prototype.sort does without a comparator, made explicit) */
export function compareCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
