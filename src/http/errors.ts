/** Error codes to HTTP: the status of each code and the JSON body of spec section 2.8. */
import type { FastifyReply } from 'fastify';
import { RegistryError, type ErrorCode } from '../registry/errors.js';

const STATUS: Record<ErrorCode, number> = {
  BLOB_UNKNOWN: 404,
  BLOB_UPLOAD_INVALID: 400,
  BLOB_UPLOAD_UNKNOWN: 404,
  DIGEST_INVALID: 400,
  MANIFEST_INVALID: 400,
  MANIFEST_UNKNOWN: 404,
  MANIFEST_UNVERIFIED: 400,
  NAME_INVALID: 400,
  NAME_UNKNOWN: 404,
  PAGINATION_NUMBER_INVALID: 400,
  RANGE_INVALID: 416,
  SIZE_INVALID: 400,
  TAG_INVALID: 400,
  UNAUTHORIZED: 401,
  DENIED: 403,
  UNSUPPORTED: 405,
  TOOMANYREQUESTS: 429,
  NOT_FOUND: 404,
  UNKNOWN: 500,
  UNAVAILABLE: 503,
};

export function statusOf(err: RegistryError): number {
  return err.status ?? STATUS[err.code];
}

/** `err` answered with `status` instead of its code's usual one: the edge's choice where the spec asks for it (400 BLOB_UNKNOWN on a manifest PUT) */
export function withStatus(err: RegistryError, status: number): RegistryError {
  return new RegistryError(err.code, err.message, { detail: err.detail, more: err.more, headers: err.headers, status, cause: err.cause });
}

export function sendError(reply: FastifyReply, err: RegistryError): FastifyReply {
  for (const [name, value] of Object.entries(err.headers)) reply.header(name, value);
  return reply
    .code(statusOf(err))
    .header('content-type', 'application/json; charset=utf-8')
    .send(JSON.stringify({ errors: err.entries() }));
}
