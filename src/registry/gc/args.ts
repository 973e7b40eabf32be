/** The arguments of `berth garbage-collect`, Distribution's: `[-d|--dry-run] [-m|--delete-untagged] [-q|--quiet] CONFIG.yml`, and berth's `--retention`. */

export interface CollectArgs {
  dryRun: boolean;
  deleteUntagged: boolean;
  quiet: boolean;
  /** apply storage.maintenance.retention.policies first (berth's own) */
  retention: boolean;
  /** the configuration file; undefined: REGISTRY_CONFIGURATION_PATH names it */
  file?: string;
}

const FLAGS: Record<string, keyof Omit<CollectArgs, 'file'>> = {
  '-d': 'dryRun',
  '--dry-run': 'dryRun',
  '-m': 'deleteUntagged',
  '--delete-untagged': 'deleteUntagged',
  '-q': 'quiet',
  '--quiet': 'quiet',
  '--retention': 'retention',
};

/** the parsed arguments, or a message saying what is wrong with them */
export function parseCollectArgs(argv: readonly string[]): CollectArgs | string {
  const args: CollectArgs = { dryRun: false, deleteUntagged: false, quiet: false, retention: false };
  for (const arg of argv) {
    const flag = FLAGS[arg];
    if (flag) args[flag] = true;
    else if (arg.startsWith('-')) return `unknown flag ${arg}`;
    else if (args.file === undefined) args.file = arg;
    else return `one configuration file only, got ${args.file} and ${arg}`;
  }
  return args;
}
