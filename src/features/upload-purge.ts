/**
 * Upload purging (storage.maintenance.uploadpurging): every `interval`, the uploads started longer
 * than `age` ago are deleted (src/registry/purge.ts); not by a read-only registry. Expired uploads
 * are also refused on use: app.ts gives the upload sessions the age.
 */
import type { Feature } from './feature.js';

interface UploadPurgeConfig {
  storage: { maintenance: { readonly: { enabled: boolean }; uploadpurging: { enabled: boolean; age: number; interval: number; dryrun: boolean } } };
}

export const uploadPurgeFeature: Feature<UploadPurgeConfig> = {
  name: 'upload purge',
  enabled: ({ storage }) => storage.maintenance.uploadpurging.enabled && !storage.maintenance.readonly.enabled,
  async load(config, { logger, scheduler }) {
    const { uploadPurgeTask } = await import('../registry/purge.js');
    return {
      attach({ driver }) {
        scheduler.every(uploadPurgeTask(driver, config.storage.maintenance.uploadpurging, logger, scheduler.clock));
      },
    };
  },
};
