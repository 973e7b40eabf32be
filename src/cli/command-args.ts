/**
 * The arguments of berth's maintenance commands (`garbage-collect`, `uploads purge`, `verify`):
 * flags, and at most one configuration file (none: REGISTRY_CONFIGURATION_PATH names it). Parsed
 * by node:util's parseArgs; misuse comes back as a message for the command line, not a throw.
 */
import { parseArgs, type ParseArgsConfig } from 'node:util';

type Options = NonNullable<ParseArgsConfig['options']>;

export interface CommandArgs {
  values: Record<string, string | boolean | undefined>;
  file?: string;
}

/** `needs`: for each option that takes a value, what it needs ("a duration such as 1h"), for the message when it is missing or wrong */
export function parseCommandArgs(argv: readonly string[], options: Options, needs: Record<string, string> = {}): CommandArgs | string {
  try {
    const { values, positionals } = parseArgs({ args: [...argv], options, allowPositionals: true, strict: true });
    if (positionals.length > 1) return `one configuration file only, got ${positionals[0]} and ${positionals[1]}`;
    return { values: values as CommandArgs['values'], file: positionals[0] };
  } catch (err) {
    const { code, message } = err as NodeJS.ErrnoException;
    if (code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION') return `unknown flag ${/'([^']+)'/.exec(message)?.[1] ?? message}`;
    if (code === 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE') {
      // an option that takes a value was given none
      const name = /--([a-z-]+)/.exec(message)?.[1];
      return name !== undefined && needs[name] !== undefined ? valueNeeded(name, needs[name], 'nothing') : message.split('\n')[0];
    }
    throw err;
  }
}

/** the message for an option's value that is missing (`got` nothing) or wrong */
export function valueNeeded(option: string, needs: string, got: string): string {
  return `--${option} needs ${needs}, got ${got}`;
}
