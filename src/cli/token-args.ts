/**
 * The arguments of `berth token create --name NAME --repository GLOB [--repository GLOB ...]
 * --actions pull,push[,delete] [--expires 90d] CONFIG.yml`, `berth token list CONFIG.yml` and
 * `berth token revoke NAME CONFIG.yml`.
 */
import { parseArgs } from 'node:util';
import { actionsProblem, tokenProblem, type NewToken } from '../auth/api-tokens.js';
import { parseDuration } from '../config/duration.js';
import { parseCommandArgs, valueNeeded } from './command-args.js';

export type TokenArgs =
  | { command: 'create'; token: NewToken; file?: string }
  | { command: 'list'; file?: string }
  | { command: 'revoke'; name: string; file?: string };

const DAY_MS = 86_400_000;
const EXPIRES = 'a duration such as 90d, 12h or 30m';

/** the parsed arguments, or a message saying what is wrong with them */
export function parseTokenArgs(argv: readonly string[]): TokenArgs | string {
  const [sub, ...rest] = argv;
  switch (sub) {
    case 'create':
      return parseCreate(rest);
    case 'list': {
      const parsed = parseCommandArgs(rest, {});
      return typeof parsed === 'string' ? parsed : { command: 'list', ...(parsed.file !== undefined ? { file: parsed.file } : {}) };
    }
    case 'revoke': {
      let positionals: string[];
      try {
        ({ positionals } = parseArgs({ args: [...rest], options: {}, allowPositionals: true, strict: true }));
      } catch (err) {
        return (err as Error).message.split('\n')[0];
      }
      if (positionals.length === 0) return 'name the token to revoke: berth token revoke NAME CONFIG.yml';
      if (positionals.length > 2) return `one token name and one configuration file only, got ${positionals.join(' ')}`;
      return { command: 'revoke', name: positionals[0], ...(positionals[1] !== undefined ? { file: positionals[1] } : {}) };
    }
    default:
      return `no command "token ${sub ?? ''}" (berth token create|list|revoke)`;
  }
}

function parseCreate(argv: readonly string[]): TokenArgs | string {
  const parsed = parseCommandArgs(
    argv,
    { name: { type: 'string' }, repository: { type: 'string', multiple: true }, actions: { type: 'string' }, expires: { type: 'string' } },
    { name: 'a token name', repository: 'a repository glob such as "team/*"', actions: 'actions such as pull,push', expires: EXPIRES },
  );
  if (typeof parsed === 'string') return parsed;
  const { values, file } = parsed as unknown as { values: { name?: string; repository?: string[]; actions?: string; expires?: string }; file?: string };
  if (values.name === undefined) return '--name is required: the token\'s name, which is the user name of docker login';
  if (values.repository === undefined) return '--repository is required: a repository glob such as "team/*" (repeat it for more)';
  if (values.actions === undefined) return '--actions is required: pull, push and delete, comma-separated (e.g. pull,push)';
  const actions = values.actions.split(',').map((a) => a.trim()).filter((a) => a !== '');
  const bad = actionsProblem(actions);
  if (bad) return `--actions: ${bad}`;
  const token: NewToken = { name: values.name, repositories: values.repository, actions };
  if (values.expires !== undefined) {
    const ms = parseExpiry(values.expires);
    if (ms === undefined || ms <= 0) return valueNeeded('expires', EXPIRES, values.expires);
    token.expiresInMs = ms;
  }
  const problem = tokenProblem(token);
  if (problem) return problem;
  return { command: 'create', token, ...(file !== undefined ? { file } : {}) };
}

/** `90d` (days), or a Go duration (`12h`, `30m`) */
function parseExpiry(text: string): number | undefined {
  const days = /^(\d+)d$/.exec(text);
  return days ? Number(days[1]) * DAY_MS : parseDuration(text);
}
