/**
 * Readiness: the failing checks by name (empty when ready). With a `health:` block it is the
 * monitor's last verdicts; without one, a live probe of the store per request, so /readyz and
 * /debug/health still say whether the store answers.
 */
import type { StorageDriver } from '../storage/driver.js';
import { storageCheck } from './checks.js';
import type { HealthMonitor } from './monitor.js';

export type Readiness = () => Promise<Record<string, string>>;

const LIVE_PROBE_TIMEOUT_MS = 2000;

export function readiness(driver: StorageDriver, monitor: HealthMonitor | undefined): Readiness {
  if (monitor) return async () => monitor.failures();
  const probe = storageCheck(driver, LIVE_PROBE_TIMEOUT_MS);
  return async () => {
    try {
      await probe();
      return {};
    } catch (err) {
      return { [storageCheckName(driver)]: (err as Error).message || String(err) };
    }
  };
}

/** Distribution's name for the storage check: storagedriver_<driver> */
export function storageCheckName(driver: StorageDriver): string {
  return `storagedriver_${driver.name}`;
}
