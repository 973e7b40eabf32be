/**
 * A rule's state in storage (`_berth/replication/<rule>/state.json`): its figures, the last
 * error and the last run's result, so `berth replicate status` (another process) sees them and a
 * restart does not forget the last error. Written after each pull run and when a push rule's
 * error state changes, not per image.
 */
import { unlessMissing, type StorageDriver } from '../storage/driver.js';
import * as layout from '../registry/layout.js';
import type { RuleFigures } from './stats.js';

export interface RuleState {
  rule: string;
  direction: 'pull' | 'push';
  figures: RuleFigures;
  /** the last error, until a later success (ISO time and message) */
  lastError?: { at: string; message: string };
  /** the last success: a pull run that ended without errors, or a push or delete sent */
  lastSuccess?: string;
  /** push: until when sending waits after a failure (the back-off) */
  retryAt?: string;
}

export async function readState(driver: StorageDriver, rule: string): Promise<RuleState | undefined> {
  const content = await unlessMissing(driver.getContent(layout.replicationState(rule)));
  if (!content) return undefined;
  try {
    return JSON.parse(content.toString('utf8')) as RuleState;
  } catch {
    return undefined; // unreadable: as if none was written
  }
}

export function writeState(driver: StorageDriver, state: RuleState): Promise<void> {
  return driver.putContent(layout.replicationState(state.rule), Buffer.from(JSON.stringify(state, null, 2)));
}
