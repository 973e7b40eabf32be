/** Reading request headers that proxies may repeat or list. */

/** the first value of a header that may be repeated or comma-separated (X-Forwarded-*, X-Real-Ip) */
export function firstValue(header: string | string[] | undefined): string | undefined {
  const value = Array.isArray(header) ? header[0] : header;
  return value?.split(',')[0].trim() || undefined;
}
