/**
 * Recording pulls (src/registry/activity.ts): on when something decides by them, the pull-through
 * cache's TTL or a retention rule's `notpulledfor`; off, pulls write nothing.
 */
import { proxyTTLs, type ProxyTTLConfig } from './expiry.js';
import type { Feature } from './feature.js';
import type { RetentionConfig } from './retention.js';

export interface ActivityConfig extends RetentionConfig, ProxyTTLConfig {}

/**
 * the durations decided by last-pull times (none: nothing to record); a policy's notpulledfor
 * counts even with scheduled retention off, for `berth garbage-collect --retention`
 */
export function pullDurations(config: ActivityConfig): number[] {
  const policies = config.storage.maintenance.retention?.policies ?? [];
  return [...proxyTTLs(config.proxy).all, ...policies.map((p) => p.delete.notpulledfor ?? 0)].filter((d) => d > 0);
}

export const activityFeature: Feature<ActivityConfig> = {
  name: 'activity',
  enabled: (config) => pullDurations(config).length > 0,
  async load(config, { logger, scheduler }) {
    const { PullRecorder, RecordingContent, recordInterval } = await import('../registry/activity.js');
    const interval = recordInterval(pullDurations(config));
    return {
      contentSource(core, inner) {
        const recorder = new PullRecorder(core.driver, {
          interval,
          now: () => scheduler.clock.now(),
          onError: (err) => logger.warn({ err }, 'could not record a pull (a later pull records it)'),
        });
        return new RecordingContent(inner, recorder);
      },
    };
  },
};
