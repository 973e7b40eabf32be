/** The arguments of `berth verify [--repository NAME] [--fix] CONFIG.yml`. */
import { isRepositoryName } from '../names.js';

export interface VerifyArgs {
  repository?: string;
  fix: boolean;
  /** the configuration file; undefined: REGISTRY_CONFIGURATION_PATH names it */
  file?: string;
}

/** the parsed arguments, or a message saying what is wrong with them */
export function parseVerifyArgs(argv: readonly string[]): VerifyArgs | string {
  const args: VerifyArgs = { fix: false };
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--fix') args.fix = true;
    else if (arg === '--repository' || arg === '-r') {
      const name = argv[++i];
      if (name === undefined || !isRepositoryName(name)) return `--repository needs a repository name, got ${name ?? 'nothing'}`;
      args.repository = name;
    } else if (arg.startsWith('-')) return `unknown flag ${arg}`;
    else if (args.file === undefined) args.file = arg;
    else return `one configuration file only, got ${args.file} and ${arg}`;
  }
  return args;
}
