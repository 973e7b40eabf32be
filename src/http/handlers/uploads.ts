/**
 * Blob uploads (spec 3.1, 4.8–4.12): start, monolithic POST, mount, status, chunks, completion and
 * cancellation. The upload URL carries a signed state token (see upload-state.ts), with the
 * algorithm the upload is hashed with (`digest-algorithm` on the POST, OCI distribution-spec).
 */
import type { FastifyReply, FastifyRequest } from 'fastify';
import { isDigest, parseAlgorithm, parseDigest, type Algorithm, type Digest } from '../../registry/digest.js';
import { RegistryError } from '../../registry/errors.js';
import { isRepositoryName } from '../../registry/names.js';
import { UploadRangeError, type ChunkRange, type UploadStatus } from '../../registry/uploads.js';
import { contentLength, queryValue, queryValues, uploadBody } from '../body.js';
import type { Handler, Services } from '../context.js';
import { blobEvent } from '../events.js';
import { grantOf } from '../grants.js';
import { parseContentRange } from '../ranges.js';
import type { Route } from '../routes.js';
import type { UploadState } from '../upload-state.js';
import { CONTENT_DIGEST_HEADER, UPLOAD_UUID_HEADER } from '../wire-names.js';
import { checkWritable } from './modes.js';

type UploadsRoute = Extract<Route, { kind: 'uploads' }>;
type UploadRoute = Extract<Route, { kind: 'upload' }>;

/** POST /v2/<name>/blobs/uploads/: mount, monolithic upload, or start of a resumable upload */
export const postUpload: Handler<UploadsRoute> = async (req, reply, { name }, services) => {
  checkWritable(services.options, name);
  await services.quotas?.admitUpload(name);
  const mount = queryValue(req, 'mount');
  const from = queryValue(req, 'from');
  // a mount needs pull on the source; without it the request is a plain upload (202), and says
  // nothing about whether the blob exists there
  const mayPullSource = from !== undefined && isRepositoryName(from) && grantOf(req).allows({ type: 'repository', name: from, action: 'pull' });
  if (mount !== undefined && from !== undefined && isDigest(mount) && mayPullSource) {
    const mounted = await services.blobs.mount(from, name, mount);
    if (mounted) {
      blobEvent(req, services, 'mount', { name, digest: mounted.digest, size: mounted.size, from });
      return sendBlobCreated(req, reply, services, name, mounted.digest);
    }
  }

  const digests = queryValues(req, 'digest');
  digests.forEach(parseDigest); // a malformed digest is refused before anything is stored
  const algorithmParam = queryValue(req, 'digest-algorithm');
  const algorithm = algorithmParam === undefined ? 'sha256' : parseAlgorithm(algorithmParam);
  const upload = await services.uploads.start(name, algorithm);
  if (digests.length === 0 || mount !== undefined) return sendUploadStatus(req, reply, services, upload, 202);

  const blob = await services.uploads.complete(name, upload.uuid, digests, uploadBody(req), undefined, algorithm);
  blobEvent(req, services, 'push', { name, digest: blob.digest, size: blob.size });
  reply.header(UPLOAD_UUID_HEADER, upload.uuid);
  return sendBlobCreated(req, reply, services, name, blob.digest);
};

/** GET: the upload's progress */
export const getUpload: Handler<UploadRoute> = async (req, reply, route, services) => {
  const state = await signedState(req, route, services);
  return sendUploadStatus(req, reply, services, await services.uploads.status(route.name, route.uuid, state.algorithm), 204);
};

/** PATCH: append a chunk (with Content-Range) or a stream (without) */
export const patchUpload: Handler<UploadRoute> = async (req, reply, route, services) => {
  checkWritable(services.options, route.name);
  await services.quotas?.admitUpload(route.name);
  const state = await signedState(req, route, services);
  const range = chunkRange(req);
  if (range === 'invalid') return sendUploadStatus(req, reply, services, await services.uploads.status(route.name, route.uuid, state.algorithm), 416);
  const body = uploadBody(req);
  try {
    const updated = await services.uploads.append(route.name, route.uuid, body ?? [], range, state.algorithm, claimedOffset(state, body));
    return sendUploadStatus(req, reply, services, updated, 202);
  } catch (err) {
    if (!(err instanceof UploadRangeError)) throw err;
    // bytes beyond the declared range stay unread: close the connection after the answer
    if (!req.raw.complete && req.raw.httpVersionMajor < 2) reply.header('connection', 'close');
    return sendUploadStatus(req, reply, services, signedUpload(state, err.size), 416);
  }
};

/** PUT: complete the upload with the last bytes (if any) and the expected digest(s) */
export const putUpload: Handler<UploadRoute> = async (req, reply, route, services) => {
  checkWritable(services.options, route.name);
  await services.quotas?.admitUpload(route.name);
  const state = await signedState(req, route, services);
  const digests = queryValues(req, 'digest');
  if (digests.length === 0) {
    throw new RegistryError('DIGEST_INVALID', 'the digest query parameter is required to complete an upload (PUT <upload URL>?digest=sha256:...); the upload stays open', {
      detail: { uuid: route.uuid },
    });
  }
  digests.forEach(parseDigest);
  const range = chunkRange(req);
  if (range === 'invalid') return sendUploadStatus(req, reply, services, await services.uploads.status(route.name, route.uuid, state.algorithm), 416);
  const body = uploadBody(req);
  try {
    const blob = await services.uploads.complete(route.name, route.uuid, digests, body, range, state.algorithm, claimedOffset(state, body));
    blobEvent(req, services, 'push', { name: route.name, digest: blob.digest, size: blob.size });
    return sendBlobCreated(req, reply, services, route.name, blob.digest);
  } catch (err) {
    if (err instanceof UploadRangeError) return sendUploadStatus(req, reply, services, signedUpload(state, err.size), 416);
    throw err;
  }
};

/** DELETE: cancel the upload */
export const deleteUpload: Handler<UploadRoute> = async (req, reply, route, services) => {
  checkWritable(services.options, route.name);
  await signedState(req, route, services);
  await services.uploads.cancel(route.name, route.uuid);
  // the id of what was cancelled, as on every other upload response (and as the reference does)
  return reply.code(204).header(UPLOAD_UUID_HEADER, route.uuid).header('content-length', 0).send();
};

/**
 * The signed state of the upload URL. The store is not read when it is valid: the core call that
 * follows opens the upload once (404 when it is unknown or expired). When it is not, an upload
 * that does not exist is still 404 BLOB_UPLOAD_UNKNOWN rather than 400.
 */
async function signedState(req: FastifyRequest, route: UploadRoute, services: Services): Promise<UploadState & { algorithm: Algorithm }> {
  const state = services.uploadState.unpack(queryValue(req, '_state'));
  if (state && state.name === route.name && state.uuid === route.uuid) return { ...state, algorithm: state.algorithm ?? 'sha256' };
  await services.uploads.status(route.name, route.uuid);
  throw new RegistryError('BLOB_UPLOAD_INVALID', 'the upload URL is missing its _state parameter, was altered, or was signed with another http.secret (a registry restarted or an instance without the shared http.secret): use the Location header of the last response, or start the upload again', {
    detail: { uuid: route.uuid },
  });
}

/**
 * Where a request's bytes claim to go when it has no Content-Range: the size the upload had when
 * its URL was issued. A request sent again after its bytes were stored (a proxy's retry on an
 * empty response, a client's) claims a stale offset and is answered 416 instead of appending them
 * twice. A request without bytes claims nothing: it changes no data (an empty PUT retried after an
 * interrupted completion).
 */
function claimedOffset(state: UploadState, body: AsyncIterable<Buffer> | undefined): number | undefined {
  return body === undefined ? undefined : state.offset;
}

/** the upload as its signed state describes it, holding `size` bytes (for the Location of a 416) */
function signedUpload(state: UploadState & { algorithm: Algorithm }, size: number): UploadStatus {
  return { name: state.name, uuid: state.uuid, size, startedAt: new Date(state.startedAt), algorithm: state.algorithm };
}

/**
 * The chunk's declared range. When Content-Length is given too, it must equal the range's length
 * (400 SIZE_INVALID before anything is written).
 */
function chunkRange(req: FastifyRequest): ChunkRange | undefined | 'invalid' {
  const range = parseContentRange(req.headers['content-range']);
  const length = contentLength(req);
  if (range && range !== 'invalid' && length !== undefined && length !== range.end - range.start + 1) {
    throw new RegistryError('SIZE_INVALID', `Content-Length ${length} does not match Content-Range ${req.headers['content-range']} (${range.end - range.start + 1} bytes)`, {
      detail: { contentLength: length, contentRange: req.headers['content-range'] },
    });
  }
  return range;
}

function uploadLocation(req: FastifyRequest, services: Services, upload: UploadStatus): string {
  const state = services.uploadState.pack({
    name: upload.name,
    uuid: upload.uuid,
    offset: upload.size,
    startedAt: upload.startedAt.toISOString(),
    ...(upload.algorithm !== 'sha256' && { algorithm: upload.algorithm }),
  });
  return services.urls.build(req, `/v2/${upload.name}/blobs/uploads/${upload.uuid}`, { _state: state });
}

/** `0-<last byte>` as the endpoints of 4.8–4.10 write it; `0-0` for an empty upload */
function rangeHeader(size: number): string {
  return `0-${Math.max(0, size - 1)}`;
}

/**
 * Where the upload stands and the URL to continue with: 202 after a chunk, 204 for a status query,
 * 416 for a chunk that does not continue the upload (4.10: no body, the client resumes from Range).
 */
function sendUploadStatus(req: FastifyRequest, reply: FastifyReply, services: Services, upload: UploadStatus, status: 202 | 204 | 416): FastifyReply {
  return reply
    .code(status)
    .header('location', uploadLocation(req, services, upload))
    .header('range', rangeHeader(upload.size))
    .header(UPLOAD_UUID_HEADER, upload.uuid)
    .header('content-length', 0)
    .send();
}

function sendBlobCreated(req: FastifyRequest, reply: FastifyReply, services: Services, name: string, digest: Digest): FastifyReply {
  return reply
    .code(201)
    .header('location', services.urls.build(req, `/v2/${name}/blobs/${digest}`))
    .header(CONTENT_DIGEST_HEADER, digest)
    .header('content-length', 0)
    .send();
}
