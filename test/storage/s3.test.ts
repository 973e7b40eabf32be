/**
 * The S3 driver against a real Ceph radosgw: the shared driver suite, then what only S3 has
 * (multipart resume across driver instances, large copies, pre-signed URLs, start-up checks).
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { validateConfig } from '../../src/config/load.js';
import { S3Driver, type S3DriverOptions } from '../../src/storage/s3.js';
import { CEPH_TOOLS, startCeph, type CephS3 } from '../helpers/ceph.js';
import { needTools } from '../helpers/tools.js';
import { runDriverSuite } from './driver-suite.js';

const MiB = 1024 * 1024;

/** storage.s3 as the config schema makes it (all defaults applied) */
export function s3Options(ceph: CephS3, bucket: string, extra: Record<string, unknown> = {}): S3DriverOptions {
  const config = validateConfig({ version: '0.1', storage: { s3: ceph.params(bucket, extra) } }, 'test');
  return { ...config.storage.s3!, redirectExpiryMs: config.storage.redirect.expiry };
}

/** removes everything below the driver's root */
async function wipe(driver: S3Driver): Promise<void> {
  for (const child of await driver.list('/')) await driver.delete(child);
}

describe('s3 driver on Ceph radosgw', needTools(CEPH_TOOLS, 'the S3 driver tests'), () => {
  let ceph: CephS3;
  let bucket: string;
  before(async () => {
    ceph = await startCeph();
    bucket = await ceph.createBucket();
  });
  after(() => ceph?.stop());

  runDriverSuite('s3', async () => {
    const driver = new S3Driver(s3Options(ceph, bucket, { rootdirectory: `/suite-${randomBytes(4).toString('hex')}` }));
    return {
      driver,
      cleanup: async () => {
        const cleaner = new S3Driver(driver.options);
        await wipe(cleaner);
        await cleaner.close();
      },
    };
  });
});
