/**
 * Purging abandoned uploads (storage.maintenance.uploadpurging): every upload whose `startedat`
 * is older than `age` is removed, as Distribution does. Walks only repositories' _uploads folders.
 * `uploadPurgeTask` is the periodic task the composition root hands to the scheduler, run by one
 * instance at a time on a shared store.
 */
import type { Logger } from 'pino';
import type { Clock } from '../scheduler/clock.js';
import type { PeriodicTask } from '../scheduler/scheduler.js';
import { PathNotFoundError, unlessMissing, type StorageDriver } from '../storage/driver.js';
import * as layout from './layout.js';
import { sharedPass } from './shared-schedule.js';

/** storage.maintenance.uploadpurging, in milliseconds */
export interface UploadPurgeOptions {
  age: number;
  interval: number;
  dryrun: boolean;
}

/**
 * purges uploads older than `age` every `interval`, logging what it removed: one instance per pass
 * on a shared store (../shared-schedule.ts), which polls at least every minute, so a long interval
 * still purges soon after start. Safe run twice: a second purge finds the directories gone.
 */
export function uploadPurgeTask(driver: StorageDriver, options: UploadPurgeOptions, logger: Pick<Logger, 'info' | 'debug' | 'warn'>, clock: Clock): PeriodicTask {
  const { age, interval, dryrun } = options;
  return sharedPass(driver, clock, logger, {
    name: 'upload purge',
    stateName: 'upload-purge',
    interval,
    async run() {
      const result = await purgeUploads(driver, new Date(clock.now() - age), dryrun);
      if (result.purged.length > 0 || result.errors.length > 0) {
        logger.info({ purged: result.purged.length, errors: result.errors, dryRun: dryrun }, 'purged old uploads');
      }
    },
  });
}

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
        const startedAt = (await readStartedAt(driver, `${upload}/startedat`)) ?? (await modifiedAt(driver, `${upload}/data`)) ?? (await modifiedAt(driver, upload));
        if (startedAt !== undefined && startedAt < olderThan) expired.push(upload);
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

/** the upload's start time; undefined for a missing or unreadable file */
async function readStartedAt(driver: StorageDriver, path: string): Promise<Date | undefined> {
  const content = await unlessMissing(driver.getContent(path));
  const date = new Date(content?.toString().trim() ?? NaN);
  return Number.isNaN(date.getTime()) ? undefined : date;
}

/**
 * When an upload has no readable `startedat`, the time of its data (or of its directory: S3 has no
 * directory times and answers now) decides: a broken upload is purged once it is old, but one whose
 * POST is writing `startedat` right now is left alone.
 */
async function modifiedAt(driver: StorageDriver, path: string): Promise<Date | undefined> {
  return (await unlessMissing(driver.stat(path)))?.modTime;
}
