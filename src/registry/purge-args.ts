/** The arguments of `berth uploads purge [--older-than DURATION] [--dry-run] CONFIG.yml`. */
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
  const args: PurgeArgs = { dryRun: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--dry-run' || arg === '-d') args.dryRun = true;
    else if (arg === '--older-than' || arg.startsWith('--older-than=')) {
      const text = arg.includes('=') ? arg.slice(arg.indexOf('=') + 1) : argv[++i];
      const ms = text === undefined ? undefined : parseDuration(text);
      if (ms === undefined) return `--older-than needs a duration such as 1h or 30m, got ${text ?? 'nothing'}`;
      args.olderThan = ms;
    } else if (arg.startsWith('-')) return `unknown flag ${arg}`;
    else if (args.file === undefined) args.file = arg;
    else return `one configuration file only, got ${args.file} and ${arg}`;
  }
  return args;
}
