/** The content-delivery middleware (middleware.storage: cloudfront), each entry around the driver in order. */
import type { CloudFrontOptions } from '../storage/middleware/cloudfront.js';
import type { Feature } from './feature.js';

interface CloudFrontConfig {
  middleware: { storage: readonly { options: CloudFrontOptions }[] };
}

export const cloudfrontFeature: Feature<CloudFrontConfig> = {
  name: 'cloudfront',
  enabled: (config) => config.middleware.storage.length > 0,
  async load(config, { logger }) {
    const { CloudFrontMiddleware } = await import('../storage/middleware/cloudfront.js');
    return {
      wrapDriver: (driver) =>
        config.middleware.storage.reduce(
          (inner, entry, i) => new CloudFrontMiddleware(inner, entry.options, { logger, key: `middleware.storage.${i}.options` }),
          driver,
        ),
    };
  },
};
