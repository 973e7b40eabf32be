/** GET, HEAD and DELETE /v2/<name>/blobs/<digest> (spec 4.6, 4.7). */
import { parseDigest } from '../../registry/digest.js';
import { RegistryError } from '../../registry/errors.js';
import type { Handler } from '../context.js';
import { blobEvent, deleteEvent } from '../events.js';
import { parseRange } from '../ranges.js';
import type { Route } from '../routes.js';
import { CONTENT_DIGEST_HEADER } from '../wire-names.js';
import { checkDeletable } from './modes.js';

type BlobRoute = Extract<Route, { kind: 'blob' }>;

const ONE_YEAR = 'max-age=31536000';

export const getBlob: Handler<BlobRoute> = async (req, reply, route, services) => {
  const { blobs, content, options } = services;
  const digest = parseDigest(route.digest);
  const { size, stored } = await content.statBlob(route.name, digest);
  const etag = `"${digest}"`;
  reply
    .header(CONTENT_DIGEST_HEADER, digest)
    .header('etag', etag)
    .header('cache-control', ONE_YEAR)
    .header('accept-ranges', 'bytes')
    .header('accept-range', 'bytes'); // the spec's spelling (4.6)

  if (req.headers['if-none-match'] === etag) return reply.code(304).send();

  if (req.method === 'GET' && options.redirect && stored) {
    const location = await blobs.redirectURL({ method: 'GET', clientIP: req.ip }, digest);
    if (location) {
      blobEvent(req, services, 'pull', { name: route.name, digest, size });
      return reply.code(307).header('location', location).send();
    }
  }

  const range = parseRange(req.headers.range, size);
  if (range === 'invalid') {
    // RFC 7233 4.4: a 416 carries the current length, so a client can ask again within it
    reply.header('content-range', `bytes */${size}`);
    throw new RegistryError('RANGE_INVALID', `range ${JSON.stringify(req.headers.range)} is malformed or outside the blob's ${size} bytes (bytes=<start>-<end>, <start>- or -<last n bytes>; of several ranges the first within the blob is served)`, {
      detail: { size },
    });
  }
  reply.header('content-type', 'application/octet-stream');
  const start = range?.start ?? 0;
  const length = range ? range.end - range.start + 1 : size;
  reply.header('content-length', length);
  if (range) reply.code(206).header('content-range', `bytes ${range.start}-${range.end}/${size}`);
  if (req.method === 'HEAD') return reply.send();
  const stream = await content.openBlob(route.name, digest, range && { offset: start, length });
  blobEvent(req, services, 'pull', { name: route.name, digest, size });
  return reply.send(stream);
};

export const deleteBlob: Handler<BlobRoute> = async (req, reply, route, services) => {
  const { blobs, options } = services;
  checkDeletable(options, route.name);
  const digest = parseDigest(route.digest);
  await blobs.unlink(route.name, digest);
  deleteEvent(req, services, { name: route.name, digest });
  reply.code(202).header(CONTENT_DIGEST_HEADER, digest).header('content-length', 0).send();
};
