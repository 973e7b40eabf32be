/** The arguments of `berth garbage-collect`, Distribution's: `[-d|--dry-run] [-m|--delete-untagged] [-q|--quiet] CONFIG.yml`, and berth's `--retention`. */
import { parseCommandArgs } from './command-args.js';

export interface CollectArgs {
  dryRun: boolean;
  deleteUntagged: boolean;
  quiet: boolean;
  /** apply storage.maintenance.retention.policies first (berth's own) */
  retention: boolean;
  /** the configuration file; undefined: REGISTRY_CONFIGURATION_PATH names it */
  file?: string;
}

/** the parsed arguments, or a message saying what is wrong with them */
export function parseCollectArgs(argv: readonly string[]): CollectArgs | string {
  const parsed = parseCommandArgs(argv, {
    'dry-run': { type: 'boolean', short: 'd' },
    'delete-untagged': { type: 'boolean', short: 'm' },
    quiet: { type: 'boolean', short: 'q' },
    retention: { type: 'boolean' },
  });
  if (typeof parsed === 'string') return parsed;
  const { values, file } = parsed;
  const args: CollectArgs = { dryRun: values['dry-run'] === true, deleteUntagged: values['delete-untagged'] === true, quiet: values.quiet === true, retention: values.retention === true };
  if (file !== undefined) args.file = file;
  return args;
}
