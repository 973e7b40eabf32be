/**
 * Settings that are valid but do nothing as written: accepted (Distribution accepts them too), and
 * said once at start-up and by `berth config check`, so an operator does not believe they act.
 */
import type { Config } from './schema.js';

export function unusedSettings(config: Config): string[] {
  const warnings: string[] = [];
  if (config.redis && !config.ratelimit) {
    warnings.push('redis: configured but unused: berth uses Redis only to share ratelimit buckets between instances (set ratelimit, or remove the block)');
  }
  return warnings;
}
