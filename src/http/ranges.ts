/** Byte ranges: the `Range` of a blob read (RFC 7233, one range) and the `Content-Range` of a chunk. */
import type { ChunkRange } from '../registry/uploads.js';

export interface ByteRange {
  start: number;
  /** inclusive */
  end: number;
}

/**
 * The range `header` asks for in a blob of `size` bytes: undefined for no Range header, 'invalid'
 * for a malformed, multiple or unsatisfiable one (answered 416).
 */
export function parseRange(header: string | undefined, size: number): ByteRange | undefined | 'invalid' {
  if (header === undefined) return undefined;
  const m = /^bytes=(\d*)-(\d*)$/.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return 'invalid';
  if (m[1] === '') {
    // suffix range: the last N bytes
    const length = Number(m[2]);
    if (length === 0 || size === 0) return 'invalid';
    return { start: Math.max(0, size - length), end: size - 1 };
  }
  const start = Number(m[1]);
  const end = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
  if (start >= size || (m[2] !== '' && Number(m[2]) < start)) return 'invalid';
  return { start, end };
}

/**
 * The `Content-Range` of an upload chunk: `<start>-<end>` as the spec writes it; `bytes <start>-<end>`,
 * with an optional `/<total>`, and `bytes=<start>-<end>` are also accepted as clients send them.
 * undefined when absent, 'invalid' when malformed.
 */
export function parseContentRange(header: string | undefined): ChunkRange | undefined | 'invalid' {
  if (header === undefined) return undefined;
  const m = /^(?:bytes[ =])?(\d+)-(\d+)(?:\/(?:\d+|\*))?$/.exec(header.trim());
  if (!m) return 'invalid';
  const range = { start: Number(m[1]), end: Number(m[2]) };
  return range.end < range.start ? 'invalid' : range;
}
