/**
 * Online garbage collection (storage.maintenance.gc): every instance records blob uses for the
 * collector's protocol; once per interval the instance that claims the pass collects. Its last
 * figures go to /debug/vars and Prometheus.
 */
import type { Feature, FeatureParts } from './feature.js';

interface GcConfig {
  storage: { maintenance: { readonly: { enabled: boolean }; gc: { enabled: boolean; interval: number; delay: number; dryrun: boolean; deleteuntagged: boolean } } };
}

export const gcFeature: Feature<GcConfig> = {
  name: 'gc',
  enabled: ({ storage }) => storage.maintenance.gc.enabled && !storage.maintenance.readonly.enabled,
  async load(config, { logger, scheduler }) {
    const settings = config.storage.maintenance.gc;
    const { TouchingGuard } = await import('../registry/gc/touch.js');
    const { collectionTask } = await import('../registry/gc/task.js');
    const last = { runs: 0, lastDurationSeconds: 0, lastBlobsFreed: 0, lastBytesFreed: 0, lastBlobsTrashed: 0, lastBytesTrashed: 0, lastBlobsRestored: 0, lastManifestsDeleted: 0, lastManifestsRestored: 0, lastFinishedSeconds: 0 };
    const parts: FeatureParts = {
      // a blob used less than a quarter of the delay ago is not recorded again (touch.ts)
      blobGuard: (driver) => new TouchingGuard(driver, settings.delay / 4),
      attach({ driver }) {
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
          }),
        );
      },
      figures: () => ({ gc: { ...last } }),
    };
    return parts;
  },
};
