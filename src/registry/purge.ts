/**
 * Purging abandoned uploads (storage.maintenance.uploadpurging): every upload whose `startedat`
 * is older than `age` is removed, as Distribution does. Walks only repositories' _uploads folders.
 */
import { PathNotFoundError, unlessMissing, type StorageDriver } from '../storage/driver.js';
import * as layout from './layout.js';

export interface PurgeResult {
  /** upload directories removed (or, in a dry run, that would be) */
  purged: string[];
  errors: string[];
}

export async function purgeUploads(driver: StorageDriver, olderThan: Date, dryRun: boolean): Promise<PurgeResult> {
  const result: PurgeResult = { purged: [], errors: [] };
  const expired: string[] = [];
  try {
    await driver.walk(layout.REPOSITORIES, async (info) => {
      if (!info.isDir) return;
      const base = info.path.slice(info.path.lastIndexOf('/') + 1);
      if (base === '_layers' || base === '_manifests') return 'skip';
      if (base !== '_uploads') return;
      for (const upload of await driver.list(info.path)) {
        const startedAt = await readStartedAt(driver, `${upload}/startedat`);
        if (startedAt === undefined || startedAt < olderThan) expired.push(upload);
      }
      return 'skip';
    });
  } catch (err) {
    if (err instanceof PathNotFoundError) return result; // no repositories yet
    throw err;
  }
  for (const dir of expired) {
    try {
      if (!dryRun) await driver.delete(dir);
      result.purged.push(dir);
    } catch (err) {
      if (!(err instanceof PathNotFoundError)) result.errors.push(`${dir}: ${(err as Error).message}`);
    }
  }
  return result;
}

/** the upload's start time; undefined for a missing or unreadable file (a broken upload, purged too) */
async function readStartedAt(driver: StorageDriver, path: string): Promise<Date | undefined> {
  const content = await unlessMissing(driver.getContent(path));
  const date = new Date(content?.toString().trim() ?? NaN);
  return Number.isNaN(date.getTime()) ? undefined : date;
}
