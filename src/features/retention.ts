/**
 * Retention policies (storage.maintenance.retention, src/registry/retention/): a pass every
 * `interval`, shared by every instance on the storage, not run by a read-only registry. Every
 * instance with it records manifest and blob uses and waits out deletions in progress before a
 * PUT's 201 (the deletion protocol: src/registry/gc/deleting.ts), so set it on every instance.
 */
import type { RetentionPolicy } from '../registry/retention/policy.js';
import type { Feature } from './feature.js';

/** the retention settings, as this feature and the activity feature read them */
export interface RetentionConfig {
  storage: {
    maintenance: {
      readonly: { enabled: boolean };
      retention?: { enabled: boolean; interval: number; dryrun: boolean; policies: RetentionPolicy[] };
      gc?: { enabled: boolean; delay: number };
    };
  };
}

export const retentionFeature: Feature<RetentionConfig> = {
  name: 'retention',
  enabled: (config) => (config.storage.maintenance.retention?.enabled ?? false) && !config.storage.maintenance.readonly.enabled,
  async load(config, { logger, scheduler }) {
    const { retentionTask } = await import('../registry/retention/task.js');
    const { TouchingGuard } = await import('../registry/gc/touch.js');
    const retention = config.storage.maintenance.retention!;
    // this guard serves online collection too when it is on (the first feature's guard is used):
    // a use is written again within a quarter of the shortest age either decides by (touch.ts)
    const ages = retention.policies.flatMap((p) => [p.delete.tagsolderthan, p.delete.untaggedolderthan, p.delete.notpulledfor]);
    const gc = config.storage.maintenance.gc;
    const quietMs = Math.min(...ages.filter((a): a is number => a !== undefined), gc?.enabled ? gc.delay : Infinity, 3_600_000) / 4;
    return {
      blobGuard: (driver) => new TouchingGuard(driver, quietMs),
      attach(running) {
        scheduler.every(retentionTask(running.driver, retention, running.notifier, scheduler.clock, logger.child({ component: 'retention' })));
      },
    };
  },
};
