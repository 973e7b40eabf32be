/**
 * How secrets are hidden wherever the configuration is shown: `berth config check`, the start-up
 * log and /debug/vars. A leaf (it imports nothing), so config/ and notifications/ share it.
 */

export const MASK = '********';

/** header values hidden (they often carry tokens); names kept */
export function maskHeaders(headers: Record<string, string[]>): Record<string, string[]> {
  return Object.fromEntries(Object.entries(headers).map(([name, values]) => [name, values.map(() => MASK)]));
}
