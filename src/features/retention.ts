/**
 * Retention policies (storage.maintenance.retention, src/registry/retention/): a pass every
 * `interval`, shared by every instance on the storage, not run by a read-only registry. The PUT's
 * half of its deletion protocol is on every writable instance (features/gc.ts).
 */
import type { PolicyOptions } from '../policies/options.js';
import type { RetentionPolicy } from '../registry/retention/policy.js';
import type { Feature } from './feature.js';

/** the retention settings, as this feature and the activity feature read them */
export interface RetentionConfig {
  storage: {
    maintenance: {
      readonly: { enabled: boolean };
      retention?: { enabled: boolean; interval: number; dryrun: boolean; policies: RetentionPolicy[] };
    };
  };
  /** immutable tags are never deleted by retention */
  policies?: PolicyOptions[];
}

export const retentionFeature: Feature<RetentionConfig> = {
  name: 'retention',
  enabled: (config) => (config.storage.maintenance.retention?.enabled ?? false) && !config.storage.maintenance.readonly.enabled,
  async load(config, { logger, scheduler }) {
    const [{ retentionTask }, { fixedTags }] = await Promise.all([import('../registry/retention/task.js'), import('../policies/immutable-tags.js')]);
    const retention = { ...config.storage.maintenance.retention!, fixedTag: fixedTags(config.policies) };
    return {
      attach(running) {
        scheduler.every(retentionTask(running.driver, retention, running.notifier, scheduler.clock, logger.child({ component: 'retention' }), running.index));
      },
    };
  },
};
