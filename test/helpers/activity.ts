/** Storage checks shared by the expiry and retention tests. */
import * as layout from '../../src/registry/layout.js';
import type { Digest } from '../../src/registry/digest.js';
import { unlessMissing, type StorageDriver } from '../../src/storage/driver.js';
import { advanceUntil } from './manual-clock.js';

export const exists = async (driver: StorageDriver, path: string): Promise<boolean> => (await unlessMissing(driver.stat(path))) !== undefined;

/** waits until the pull of `name@digest` at `at` is recorded (the write is not awaited by the pull) */
export function pulledAt(driver: StorageDriver, name: string, digest: string, at: number): Promise<void> {
  return advanceUntil(undefined, `${name}@${digest} is recorded as pulled`, async () => {
    const content = await unlessMissing(driver.getContent(layout.manifestRevisionPulled(name, digest as Digest)));
    return content?.toString() === new Date(at).toISOString();
  });
}

/**
 * a pass on the shared schedule `name` is at work: it holds its claim (src/registry/shared-schedule.ts).
 * A state caught half-written counts as at work: a pass is starting or ending.
 */
export async function passAtWork(driver: StorageDriver, name: string): Promise<boolean> {
  const content = await unlessMissing(driver.getContent(layout.scheduleState(name)));
  if (content === undefined) return false;
  try {
    return typeof (JSON.parse(content.toString()) as { heldUntil?: unknown }).heldUntil === 'number';
  } catch {
    return true;
  }
}
