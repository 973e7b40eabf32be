/** The arguments of `berth uploads purge [--older-than DURATION] [--dry-run] CONFIG.yml`. */
import { parseCommandArgs, valueNeeded } from './command-args.js';
import { parseDuration } from '../config/duration.js';

export interface PurgeArgs {
  /** ms; undefined: storage.maintenance.uploadpurging.age */
  olderThan?: number;
  dryRun: boolean;
  /** the configuration file; undefined: REGISTRY_CONFIGURATION_PATH names it */
  file?: string;
}

/** the parsed arguments, or a message saying what is wrong with them */
export function parsePurgeArgs(argv: readonly string[]): PurgeArgs | string {
  const parsed = parseCommandArgs(argv, { 'dry-run': { type: 'boolean', short: 'd' }, 'older-than': { type: 'string' } }, { 'older-than': DURATION });
  if (typeof parsed === 'string') return parsed;
  const { values, file } = parsed;
  const args: PurgeArgs = { dryRun: values['dry-run'] === true };
  const text = values['older-than'];
  if (typeof text === 'string') {
    const ms = parseDuration(text);
    if (ms === undefined) return valueNeeded('older-than', DURATION, text);
    args.olderThan = ms;
  }
  if (file !== undefined) args.file = file;
  return args;
}

const DURATION = 'a duration such as 1h or 30m';
