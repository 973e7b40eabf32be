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

/** the values Go's flag packages take for a boolean flag (strconv.ParseBool): `--dry-run=true` */
const GO_BOOLEANS: Record<string, boolean> = { '1': true, t: true, T: true, true: true, TRUE: true, True: true, '0': false, f: false, F: false, false: false, FALSE: false, False: false };

/**
 * `--flag=VALUE` and `-f=VALUE` for a boolean option, as Distribution's scripts write them: true
 * becomes the bare flag, false drops it; any other value is a message. Other arguments stay.
 */
function goBooleans(argv: readonly string[], options: Options): string[] | string {
  const out: string[] = [];
  for (const [i, arg] of argv.entries()) {
    if (arg === '--') return [...out, ...argv.slice(i)];
    const match = /^(--?)([^=]+)=(.*)$/.exec(arg);
    const name = match && (match[1] === '--' ? match[2] : Object.keys(options).find((key) => options[key].short === match[2]));
    if (!match || !name || options[name]?.type !== 'boolean') {
      out.push(arg);
      continue;
    }
    const value = GO_BOOLEANS[match[3]];
    if (value === undefined) return `--${name} takes true or false, got ${JSON.stringify(match[3])}`;
    if (value) out.push(`--${name}`);
  }
  return out;
}

/** `needs`: for each option that takes a value, what it needs ("a duration such as 1h"), for the message when it is missing or wrong */
export function parseCommandArgs(argv: readonly string[], options: Options, needs: Record<string, string> = {}): CommandArgs | string {
  const args = goBooleans(argv, options);
  if (typeof args === 'string') return args;
  try {
    const { values, positionals } = parseArgs({ args, options, allowPositionals: true, strict: true });
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
