/**
 * Garbage collection's and retention's protocol on every writable instance: blob and manifest
 * uses are recorded, and a manifest PUT waits out deletions in progress in its repository before
 * its 201 (src/registry/gc/touch.ts, deleting.ts), so online collection, retention and a
 * `berth garbage-collect` run beside the instances can delete safely. With
 * storage.maintenance.gc.enabled, on each interval the instance that claims the pass also collects;
 * its last figures go to /debug/vars and Prometheus.
 */
import type { RetentionPolicy } from '../registry/retention/policy.js';
import type { Feature, FeatureParts } from './feature.js';

interface GcConfig {
  storage: {
    maintenance: {
      readonly: { enabled: boolean };
      gc: { enabled: boolean; interval: number; delay: number; dryrun: boolean; deleteuntagged: boolean };
      retention?: { enabled: boolean; policies: RetentionPolicy[] };
    };
  };
}

/**
 * A process writes a use again only after a quarter of the shortest time a deletion decides by
 * (the collection's delay, a retention age): a record that old is still recent for the deleter.
 */
function quietMs(config: GcConfig): number {
  const { gc, retention } = config.storage.maintenance;
  const ages = retention?.enabled ? retention.policies.flatMap((p) => [p.delete.tagsolderthan, p.delete.untaggedolderthan, p.delete.notpulledfor]) : [];
  return Math.min(gc.delay, ...ages.filter((a): a is number => a !== undefined)) / 4;
}

export const gcFeature: Feature<GcConfig> = {
  name: 'gc',
  enabled: ({ storage }) => !storage.maintenance.readonly.enabled,
  async load(config, { logger, scheduler }) {
    const settings = config.storage.maintenance.gc;
    const { TouchingGuard } = await import('../registry/gc/touch.js');
    const guard: FeatureParts = { blobGuard: (driver) => new TouchingGuard(driver, quietMs(config)) };
    if (!settings.enabled) return guard;
    const { collectionTask } = await import('../registry/gc/task.js');
    const last = { runs: 0, lastDurationSeconds: 0, lastBlobsFreed: 0, lastBytesFreed: 0, lastBlobsTrashed: 0, lastBytesTrashed: 0, lastBlobsRestored: 0, lastManifestsDeleted: 0, lastManifestsRestored: 0, lastFinishedSeconds: 0 };
    const parts: FeatureParts = {
      ...guard,
      attach({ driver, index }) {
        scheduler.every(
          collectionTask(driver, settings, scheduler.clock, logger, (summary) => {
            Object.assign(last, {
              runs: last.runs + 1,
              lastDurationSeconds: summary.durationMs / 1000,
              lastBlobsFreed: summary.blobsPurged,
              lastBytesFreed: summary.bytesFreed,
              lastBlobsTrashed: summary.blobsTrashed,
              lastBytesTrashed: summary.bytesTrashed,
              lastBlobsRestored: summary.blobsRestored,
              lastManifestsDeleted: summary.manifestsDeleted,
              lastManifestsRestored: summary.manifestsRestored,
              lastFinishedSeconds: scheduler.clock.now() / 1000,
            });
          }, undefined, index),
        );
      },
      figures: () => ({ gc: { ...last } }),
    };
    return parts;
  },
};
