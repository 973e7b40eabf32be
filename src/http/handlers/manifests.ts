/** GET, HEAD, PUT and DELETE /v2/<name>/manifests/<reference> (spec 4.3–4.5). */
import type { FastifyRequest } from 'fastify';
import { parseDigest } from '../../registry/digest.js';
import { RegistryError } from '../../registry/errors.js';
import { MissingReferences, type Reference } from '../../registry/manifest-store.js';
import { MANIFEST_LIMIT } from '../../registry/manifests/index.js';
import { checkTag } from '../../registry/names.js';
import { contentTypeOf, queryValues, readSmallBody } from '../body.js';
import { clientGone } from '../client-gone.js';
import { withStatus } from '../errors.js';
import { grantOf } from '../grants.js';
import type { Handler } from '../context.js';
import type { Route } from '../routes.js';
import { deleteEvent, manifestEvent } from '../events.js';
import { CONTENT_DIGEST_HEADER } from '../wire-names.js';
import { checkDeletable, checkWritable } from './modes.js';

type ManifestRoute = Extract<Route, { kind: 'manifest' }>;

/**
 * the most `tag` parameters one push by digest applies (the spec asks for at least 10; past this,
 * 414): a tags/list page holds 100, and 100 of the longest tags still fit Node's 16 KiB header limit
 */
export const TAG_PARAM_LIMIT = 100;

/**
 * the tags a push by digest also applies (`?tag=a&tag=b`, the distribution-spec's next version):
 * each checked as a tag, duplicates once; refused beside a tag reference, which names its own tag
 */
function tagParams(req: FastifyRequest, reference: Reference): string[] {
  const tags = [...new Set(queryValues(req, 'tag'))];
  if (tags.length === 0) return tags;
  if ('tag' in reference) {
    throw new RegistryError('TAG_INVALID', `tag query parameters go with a push by digest (PUT /v2/<name>/manifests/<digest>?tag=...), not with the tag ${JSON.stringify(reference.tag)} in the URL`, { detail: { tag: reference.tag } });
  }
  if (tags.length > TAG_PARAM_LIMIT) {
    throw new RegistryError('TAG_INVALID', `too many tag parameters: ${tags.length}, at most ${TAG_PARAM_LIMIT} in one push`, { status: 414, detail: { limit: TAG_PARAM_LIMIT } });
  }
  return tags.map(checkTag);
}

/** a reference with ':' is a digest (400 DIGEST_INVALID when malformed), anything else a tag (400 TAG_INVALID) */
function parseReference(reference: string): Reference {
  return reference.includes(':') ? { digest: parseDigest(reference) } : { tag: checkTag(reference) };
}

export const getManifest: Handler<ManifestRoute> = async (req, reply, route, services) => {
  const reference = parseReference(route.reference);
  const manifest = await services.content.manifest(route.name, reference);
  const etag = `"${manifest.digest}"`;
  reply
    .header('content-type', manifest.mediaType)
    .header(CONTENT_DIGEST_HEADER, manifest.digest)
    .header('etag', etag)
    .header('content-length', manifest.content.length);
  if (req.headers['if-none-match'] === etag) return reply.code(304).send();
  if (req.method === 'HEAD') return reply.send();
  services.pulls?.pulled(route.name, manifest.digest);
  manifestEvent(req, services, 'pull', {
    name: route.name,
    digest: manifest.digest,
    mediaType: manifest.mediaType,
    size: manifest.content.length,
    tag: 'tag' in reference ? reference.tag : undefined,
    content: manifest.content,
  });
  return reply.send(manifest.content);
};

export const putManifest: Handler<ManifestRoute> = async (req, reply, route, services) => {
  const { manifests, urls, options } = services;
  checkWritable(options, route.name);
  const reference = parseReference(route.reference);
  const tags = tagParams(req, reference);
  const body = await readSmallBody(req, MANIFEST_LIMIT, () => {
    // the rest of the body stays unread: close the connection after the answer (as Go's
    // MaxBytesReader does), or the paused socket lingers and the client may block on a full window
    // (HTTP/1.1 only: HTTP/2 has no Connection header; its stream is reset once the answer is sent)
    if (req.raw.httpVersionMajor < 2) reply.header('connection', 'close');
    return new RegistryError('MANIFEST_INVALID', `manifest too large: the limit is ${MANIFEST_LIMIT} bytes`, { detail: { check: 'size', limit: MANIFEST_LIMIT } });
  });
  const manifest = await manifests.put(route.name, reference, contentTypeOf(req), body, clientGone(reply), tags, grantOf(req).user).catch((err: unknown) => {
    // a missing blob or child manifest is the request's fault here: 400, not the 404 of a GET (spec 4.4)
    throw err instanceof MissingReferences ? withStatus(err, 400) : err;
  });
  reply
    .code(201)
    .header('location', urls.build(req, `/v2/${route.name}/manifests/${manifest.digest}`))
    .header(CONTENT_DIGEST_HEADER, manifest.digest)
    .header('content-length', 0);
  if (manifest.subject) reply.header('oci-subject', manifest.subject.digest);
  // one OCI-Tag line per tag applied (RFC 9110 field lines)
  if (tags.length > 0) reply.header('oci-tag', tags);
  // one push event per tag, as if each had been pushed by its own PUT
  for (const tag of 'tag' in reference ? [reference.tag] : tags.length > 0 ? tags : [undefined]) {
    manifestEvent(req, services, 'push', {
      name: route.name,
      digest: manifest.digest,
      mediaType: manifest.mediaType,
      size: manifest.payload.length,
      tag,
      content: manifest.payload,
    });
  }
  return reply.send();
};

export const deleteManifest: Handler<ManifestRoute> = async (req, reply, route, services) => {
  const { manifests, options } = services;
  checkDeletable(options, route.name);
  const reference = parseReference(route.reference);
  if ('tag' in reference) {
    throw new RegistryError('UNSUPPORTED', `manifests are deleted by digest, not by tag: resolve ${JSON.stringify(reference.tag)} with a HEAD request and DELETE /v2/${route.name}/manifests/<digest>`);
  }
  await manifests.delete(route.name, reference.digest, grantOf(req).user);
  deleteEvent(req, services, { name: route.name, digest: reference.digest });
  return reply.code(202).header('content-length', 0).send();
};
