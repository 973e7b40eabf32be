/** The S3 storage driver (storage.s3): the AWS SDK is loaded only when it is configured. */
import type { S3Parameters } from '../storage/s3.js';
import type { Feature } from './feature.js';

interface S3Config {
  storage: { s3?: S3Parameters; redirect: { expiry: number } };
}

export const s3Feature: Feature<S3Config> = {
  name: 's3',
  enabled: (config) => config.storage.s3 !== undefined,
  async load(config, { logger }) {
    const { S3Driver } = await import('../storage/s3.js');
    return { driver: new S3Driver({ ...config.storage.s3!, redirectExpiryMs: config.storage.redirect.expiry, logger }) };
  },
};
