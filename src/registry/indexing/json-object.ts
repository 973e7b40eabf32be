/** Stored JSON read leniently for the index: an object, or undefined for anything else. */

export function parseObject(content: Buffer): Record<string, unknown> | undefined {
  try {
    const doc: unknown = JSON.parse(content.toString('utf8'));
    return isObject(doc) ? doc : undefined;
  } catch {
    return undefined;
  }
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
