/** The S3 storage driver (storage.s3): the AWS SDK is loaded only when it is configured. */
import type { S3Parameters } from '../storage/s3/driver.js';
import type { Feature } from './feature.js';

interface S3Config {
  storage: { s3?: S3Parameters; redirect: { expiry: number } };
}

export const s3Feature: Feature<S3Config> = {
  name: 's3',
  enabled: (config) => config.storage.s3 !== undefined,
  async load(config, { logger }) {
    // the SDK warns on Node 20 that its releases after January 2027 need Node 22; the lock file
    // pins one that runs on 20, so the warning says nothing the operator can act on here
    // (docs/decisions.md, "Node 20"); an operator can still set the variable to false
    process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';
    const { S3Driver } = await import('../storage/s3/driver.js');
    return { driver: new S3Driver({ ...config.storage.s3!, redirectExpiryMs: config.storage.redirect.expiry, logger }) };
  },
};
