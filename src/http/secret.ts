/**
 * The secret that signs upload URLs. Configured (http.secret), or else generated once and kept in
 * storage, so a restart does not break the uploads in flight and every instance on the same
 * storage accepts the others' URLs without configuration (Distribution generates one per process).
 * The caller has checked that the storage is ready (a missing bucket is reported as such).
 */
import { randomBytes } from 'node:crypto';
import type { Logger } from 'pino';
import { StorageError, unlessMissing, type StorageDriver } from '../storage/driver.js';
import * as layout from '../registry/layout.js';

export async function uploadSecret(
  configured: string | undefined,
  driver: StorageDriver,
  options: { readOnly: boolean; logger: Pick<Logger, 'info'> },
): Promise<string> {
  if (configured !== undefined) return configured;
  const stored = await unlessMissing(driver.getContent(layout.UPLOAD_SECRET));
  if (stored && stored.length > 0) return stored.toString();
  const generated = randomBytes(32).toString('base64url');
  if (options.readOnly) return generated; // no uploads in read-only mode, and nothing may be written
  await driver.putContent(layout.UPLOAD_SECRET, Buffer.from(generated), { secret: true }).catch((err) => {
    throw new StorageError(`storage is not writable (${(err as Error).message}); berth keeps its upload secret there when http.secret is not set`, driver.name, { cause: err });
  });
  // two instances starting at once on empty storage: the last write wins, and reading it back
  // makes both use it (a window of one round trip, on the first start only)
  const kept = (await driver.getContent(layout.UPLOAD_SECRET)).toString();
  options.logger.info(`http.secret is not set: generated the upload secret and kept it in storage (${layout.UPLOAD_SECRET}), shared by every instance on this storage`);
  return kept;
}
