/**
 * Deletion markers: the deleter's half of the protocol between a manifest PUT and whatever deletes
 * tags and manifest revisions while the registry serves (retention, online deletion of untagged
 * manifests, a garbage-collect run beside live instances). docs/decisions.md, "Retention policies".
 *
 * - A deleter writes a marker into the repository's marker directory, then checks what it is about
 *   to delete (the tag still names the digest, the push time is unchanged, no recorded use), deletes
 *   it (and puts it back if a use was recorded meanwhile: untagged.ts), then removes the marker.
 * - A manifest PUT, after all its writes, waits while a live marker is there, then reads back what
 *   it wrote and writes again what is missing (ManifestStore.put, through the BlobGuard's settle).
 *
 * Either the deleter's check comes after the PUT's writes (and sees them: it spares), or the PUT's
 * wait comes after the marker (and the PUT's read-back after the deletion): a 201 is never
 * followed by the loss of what it acknowledged, and a GET after the 201 never sees a gap.
 *
 * A marker older than MARKER_STALE_MS (a deleter that died) is ignored; a deleter whose own marker
 * is older than half that by its clock before it deletes gives the item up (the clocks of the
 * instances are assumed to agree to within seconds, as the shared schedule's claims do).
 */
import { randomUUID } from 'node:crypto';
import { unlessMissing, type StorageDriver } from '../../storage/driver.js';
import * as layout from '../layout.js';

export const MARKER_STALE_MS = 60_000;
/** how long a PUT sleeps between two looks at the markers */
const POLL_MS = 5;

export interface Marked {
  /** false once the marker is too old to be relied on: the deleter must not delete */
  fresh(): boolean;
}

/** runs `deletion` with a marker in `name`, removed however it ends */
export async function whileMarked<T>(driver: StorageDriver, name: string, deletion: (marked: Marked) => Promise<T>, now: () => number = Date.now): Promise<T> {
  const path = `${layout.gcDeletingMarkers(name)}/${randomUUID()}`;
  const written = now();
  await driver.putContent(path, Buffer.alloc(0));
  try {
    return await deletion({ fresh: () => now() - written < MARKER_STALE_MS / 2 });
  } finally {
    await unlessMissing(driver.delete(path));
  }
}

/** returns once no live marker is left in `name` */
export async function waitForDeleters(driver: StorageDriver, name: string, now: () => number = Date.now): Promise<void> {
  const dir = layout.gcDeletingMarkers(name);
  for (;;) {
    const markers = (await unlessMissing(driver.listNames(dir))) ?? [];
    if (markers.length === 0) return;
    const stats = await Promise.all(markers.map((marker) => unlessMissing(driver.stat(`${dir}/${marker}`))));
    if (!stats.some((info) => info !== undefined && now() - info.modTime.getTime() < MARKER_STALE_MS)) return;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}
