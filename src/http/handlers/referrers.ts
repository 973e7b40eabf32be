/**
 * GET /v2/<name>/referrers/<digest> (OCI distribution 1.1, beyond the spec): an image index of the
 * manifests whose `subject` is the digest, optionally filtered by `artifactType`.
 */
import { parseDigest } from '../../registry/digest.js';
import { MediaTypes } from '../../registry/manifests/index.js';
import { queryValue } from '../body.js';
import type { Handler } from '../context.js';
import type { Route } from '../routes.js';

type ReferrersRoute = Extract<Route, { kind: 'referrers' }>;

export const getReferrers: Handler<ReferrersRoute> = async (req, reply, route, { content }) => {
  const subject = parseDigest(route.digest);
  const artifactType = queryValue(req, 'artifactType');
  // storage's referrers index, or (a mirror) the upstream's list through the pull-through cache
  const referrers = await content.referrers(route.name, subject, artifactType);
  if (artifactType !== undefined) reply.header('oci-filters-applied', 'artifactType');
  // a Buffer, not a string: Fastify would append "; charset=utf-8" to the media type of a string
  return reply
    .header('content-type', MediaTypes.ociIndex)
    .send(Buffer.from(JSON.stringify({ schemaVersion: 2, mediaType: MediaTypes.ociIndex, manifests: referrers })));
};
