/** Bounds on single store calls (storage.calls), on by default: see src/storage/deadlines.ts. */
import type { Feature } from './feature.js';

interface DeadlinesConfig {
  storage: { calls: { timeout: number; slow: number } };
}

export const deadlinesFeature: Feature<DeadlinesConfig> = {
  name: 'storage call deadlines',
  enabled: ({ storage }) => storage.calls.timeout > 0 || storage.calls.slow > 0,
  async load(config, { logger }) {
    const { DeadlineDriver } = await import('../storage/deadlines.js');
    const options = { timeoutMs: config.storage.calls.timeout, slowMs: config.storage.calls.slow };
    return { wrapDriver: (inner) => new DeadlineDriver(inner, options, logger) };
  },
};
