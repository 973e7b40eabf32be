/** Request bodies: blob data is never buffered, it is handed to the core as a stream. */
import type { FastifyRequest } from 'fastify';

/** the raw request stream, or undefined when the request has no body */
export function bodyStream(req: FastifyRequest): AsyncIterable<Buffer> | undefined {
  const length = req.headers['content-length'];
  const chunked = req.headers['transfer-encoding'] !== undefined;
  if (!chunked && (length === undefined || length === '0')) return undefined;
  return req.raw;
}

/**
 * An upload's body (blob data). When the write fails part way (a full storage), iteration stops
 * without destroying the socket: destroying it with unread bytes makes the kernel reset the
 * connection and the client never reads the answer (507). The error handler then closes the
 * connection after the answer instead (`connection: close`).
 */
export function uploadBody(req: FastifyRequest): AsyncIterable<Buffer> | undefined {
  return bodyStream(req) && req.raw.iterator({ destroyOnReturn: false });
}

/** `type/subtype`, optionally followed by parameters: what the web framework accepts as a Content-Type */
const MEDIA_TYPE = /^\s*[\w!#$%&'*+.^`|~-]+\/[\w!#$%&'*+.^`|~-]+\s*(;|$)/;
const setAside = new WeakMap<object, string>();

/**
 * Fastify answers a Content-Type it cannot parse (empty, `;;`, `foo`) with its own 415 before any
 * handler runs. Such a header is taken off the request (onRequest) so the registry decides: blob
 * and token requests ignore it, a manifest PUT reads the original through contentTypeOf().
 */
export function setAsideUnparsableContentType(req: FastifyRequest): void {
  const value = req.headers['content-type'];
  if (value === undefined || MEDIA_TYPE.test(value)) return;
  setAside.set(req.raw, value);
  delete req.headers['content-type'];
}

/** the request's Content-Type as the client sent it (also one set aside as unparsable) */
export function contentTypeOf(req: FastifyRequest): string | undefined {
  return req.headers['content-type'] ?? setAside.get(req.raw);
}

/** Content-Length as a number, undefined when absent or chunked */
export function contentLength(req: FastifyRequest): number | undefined {
  const length = req.headers['content-length'];
  return length === undefined || req.headers['transfer-encoding'] !== undefined ? undefined : Number(length);
}

/** every value of a query parameter that may repeat (`digest`) */
export function queryValues(req: FastifyRequest, key: string): string[] {
  return new URLSearchParams(req.url.slice(req.url.indexOf('?') + 1 || req.url.length)).getAll(key);
}

export function queryValue(req: FastifyRequest, key: string): string | undefined {
  return queryValues(req, key)[0];
}

/**
 * The whole body of a small request (a manifest), read up to `limit` bytes; past it `tooLarge()`
 * is thrown without reading further.
 */
export async function readSmallBody(req: FastifyRequest, limit: number, tooLarge: () => Error): Promise<Buffer> {
  const declared = contentLength(req);
  if (declared !== undefined && declared > limit) throw tooLarge();
  const chunks: Buffer[] = [];
  let total = 0;
  for await (const chunk of bodyStream(req) ?? []) {
    total += chunk.length;
    if (total > limit) throw tooLarge();
    chunks.push(chunk);
  }
  return Buffer.concat(chunks);
}
