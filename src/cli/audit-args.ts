/** The arguments of `berth audit export [--since WHEN] [--until WHEN] [--repository R] [--actor A] [--action X] CONFIG.yml`. */
import { parseDuration } from '../config/duration.js';
import type { AuditFilter } from '../metadata/audit.js';
import { parseCommandArgs, valueNeeded } from './command-args.js';

export interface AuditExportArgs {
  filter: AuditFilter;
  file?: string;
}

const WHEN = 'a duration ago such as 24h, or a time such as 2026-11-26T00:00:00Z';
/** without --since: the last day */
const DEFAULT_SINCE = '24h';

/** the parsed arguments (times resolved against `now`), or a message saying what is wrong */
export function parseAuditExportArgs(argv: readonly string[], now: number): AuditExportArgs | string {
  const options = { since: { type: 'string' }, until: { type: 'string' }, repository: { type: 'string' }, actor: { type: 'string' }, action: { type: 'string' } } as const;
  const parsed = parseCommandArgs(argv, options, { since: WHEN, until: WHEN, repository: 'a repository name', actor: 'a user name', action: 'an action such as push' });
  if (typeof parsed === 'string') return parsed;
  const { values, file } = parsed;
  const filter: AuditFilter = {};
  for (const key of ['since', 'until'] as const) {
    const text = key === 'since' ? ((values.since as string | undefined) ?? DEFAULT_SINCE) : (values.until as string | undefined);
    if (text === undefined) continue;
    const at = timeOf(text, now);
    if (at === undefined) return valueNeeded(key, WHEN, JSON.stringify(text));
    filter[key] = at;
  }
  for (const key of ['repository', 'actor', 'action'] as const) {
    const value = values[key];
    if (typeof value === 'string') filter[key] = value;
  }
  return file !== undefined ? { filter, file } : { filter };
}

/** an ISO time in UTC: `text` as a duration before `now`, or as a date and time */
function timeOf(text: string, now: number): string | undefined {
  const ago = parseDuration(text);
  if (ago !== undefined) return new Date(now - ago).toISOString();
  if (!/^\d{4}-\d{2}-\d{2}/.test(text)) return undefined;
  const ms = Date.parse(text);
  return Number.isNaN(ms) ? undefined : new Date(ms).toISOString();
}
