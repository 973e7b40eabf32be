/** Byte ranges: the `Range` of a blob read (RFC 7233; of several ranges the first satisfiable one) and the `Content-Range` of a chunk. */
import type { ChunkRange } from '../registry/uploads.js';

export interface ByteRange {
  start: number;
  /** inclusive */
  end: number;
}

/**
 * The range `header` asks for in a blob of `size` bytes: undefined for no Range header, 'invalid'
 * for a malformed or unsatisfiable one (answered 416). Of several ranges the first satisfiable one
 * is served, as a plain 206 whose Content-Range says which (docs/decisions.md, "Hardening").
 */
export function parseRange(header: string | undefined, size: number): ByteRange | undefined | 'invalid' {
  if (header === undefined) return undefined;
  const m = /^bytes=(.*)$/.exec(header.trim());
  if (!m) return 'invalid';
  const ranges = m[1].split(',').map((spec) => parseRangeSpec(spec.trim(), size));
  if (ranges.includes('malformed')) return 'invalid';
  return ranges.find((range): range is ByteRange => range !== 'unsatisfiable') ?? 'invalid';
}

/** one `<start>-<end>`, `<start>-` or `-<suffix length>` of a Range header */
function parseRangeSpec(spec: string, size: number): ByteRange | 'malformed' | 'unsatisfiable' {
  const m = /^(\d*)-(\d*)$/.exec(spec);
  if (!m || (m[1] === '' && m[2] === '')) return 'malformed';
  if (m[1] === '') {
    // suffix range: the last N bytes
    const length = Number(m[2]);
    if (length === 0 || size === 0) return 'unsatisfiable';
    return { start: Math.max(0, size - length), end: size - 1 };
  }
  const start = Number(m[1]);
  if (m[2] !== '' && Number(m[2]) < start) return 'malformed';
  if (start >= size) return 'unsatisfiable';
  return { start, end: m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1) };
}

/**
 * The `Content-Range` of an upload chunk: `<start>-<end>` as the spec writes it; `bytes <start>-<end>`,
 * with an optional `/<total>`, and `bytes=<start>-<end>` are also accepted as clients send them.
 * undefined when absent, 'invalid' when malformed or beyond Number.MAX_SAFE_INTEGER.
 */
export function parseContentRange(header: string | undefined): ChunkRange | undefined | 'invalid' {
  if (header === undefined) return undefined;
  const m = /^(?:bytes[ =])?(\d+)-(\d+)(?:\/(?:\d+|\*))?$/.exec(header.trim());
  if (!m) return 'invalid';
  const range = { start: Number(m[1]), end: Number(m[2]) };
  // beyond 2^53 Number rounds: a range no upload can reach, and not the one the client meant
  if (!Number.isSafeInteger(range.end)) return 'invalid';
  return range.end < range.start ? 'invalid' : range;
}
