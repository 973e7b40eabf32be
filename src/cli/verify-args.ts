/** The arguments of `berth verify [--repository NAME] [--fix] CONFIG.yml` and `berth verify --index CONFIG.yml`. */
import { parseCommandArgs, valueNeeded } from './command-args.js';
import { isRepositoryName } from '../registry/names.js';

export interface VerifyArgs {
  repository?: string;
  fix: boolean;
  /** compare the metadata index with storage instead */
  index: boolean;
  /** the configuration file; undefined: REGISTRY_CONFIGURATION_PATH names it */
  file?: string;
}

/** the parsed arguments, or a message saying what is wrong with them */
export function parseVerifyArgs(argv: readonly string[]): VerifyArgs | string {
  const parsed = parseCommandArgs(argv, { fix: { type: 'boolean' }, index: { type: 'boolean' }, repository: { type: 'string', short: 'r' } }, { repository: NAME });
  if (typeof parsed === 'string') return parsed;
  const { values, file } = parsed;
  const args: VerifyArgs = { fix: values.fix === true, index: values.index === true };
  if (args.index && (args.fix || values.repository !== undefined)) return '--index takes no other flag (berth index rebuild repairs the index)';
  const name = values.repository;
  if (typeof name === 'string') {
    if (!isRepositoryName(name)) return valueNeeded('repository', NAME, name);
    args.repository = name;
  }
  if (file !== undefined) args.file = file;
  return args;
}

const NAME = 'a repository name';
