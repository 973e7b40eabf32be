/** Go-style durations ("500ms", "1s", "1h30m", "168h"), as Distribution's configuration writes them. */

const UNIT_MS: Record<string, number> = { ns: 1e-6, us: 1e-3, 'µs': 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
const DURATION = /^(?:\d+(?:\.\d+)?(?:ns|us|µs|ms|s|m|h))+$/;
const PART = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g;

/** milliseconds in `text`, or undefined when it is not a Go duration */
export function parseDuration(text: string): number | undefined {
  if (text === '0') return 0;
  if (!DURATION.test(text)) return undefined;
  let ms = 0;
  for (const [, amount, unit] of text.matchAll(PART)) ms += Number(amount) * UNIT_MS[unit];
  return ms;
}
