/** The content-delivery middleware (middleware.storage: cloudfront), each entry around the driver in order. */
import { ConfigError } from '../config/errors.js';
import { StorageOptionError, type StorageDriver } from '../storage/driver.js';
import type { CloudFrontOptions } from '../storage/middleware/cloudfront.js';
import type { Feature } from './feature.js';

interface CloudFrontConfig {
  middleware: { storage: readonly { options: CloudFrontOptions }[] };
}

export const cloudfrontFeature: Feature<CloudFrontConfig> = {
  name: 'cloudfront',
  enabled: (config) => config.middleware.storage.length > 0,
  async load(config, { logger, scheduler }) {
    const { CloudFrontMiddleware } = await import('../storage/middleware/cloudfront.js');
    const wrap = (inner: StorageDriver, options: CloudFrontOptions, i: number) => {
      try {
        return new CloudFrontMiddleware(inner, options, { logger, scheduler });
      } catch (err) {
        // the key file is read now: a problem is reported like a bad key, with its full path
        if (err instanceof StorageOptionError) throw new ConfigError([`middleware.storage.${i}.options.${err.option}: ${err.problem}`], 'middleware.storage');
        throw err;
      }
    };
    return { wrapDriver: (driver) => config.middleware.storage.reduce((inner, entry, i) => wrap(inner, entry.options, i), driver) };
  },
};
