/**
 * Stored JSON as it is, not as the specification shapes it: an image config is any JSON the
 * registry accepted, and a page must render it. Each field is checked before it is used; a value
 * of another shape is shown as its raw JSON, marked as such.
 */

export const isText = (value: unknown): value is string => typeof value === 'string';
export const isTexts = (value: unknown): value is string[] => Array.isArray(value) && value.every(isText);
export const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
export const isSize = (value: unknown): value is number => typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;

/** a value of an unexpected shape, as its JSON */
export function Raw({ value }: { value: unknown }) {
  return <code class="wrap raw" title="not the shape the specification gives this field: shown as stored">{JSON.stringify(value) ?? String(value)}</code>;
}

/** a string as text; anything else as its raw JSON */
export function Text({ value }: { value: unknown }) {
  return isText(value) ? <>{value}</> : <Raw value={value} />;
}
