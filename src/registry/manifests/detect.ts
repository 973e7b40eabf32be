/**
 * The media type of stored manifest bytes that carry no record of how they were pushed (written by
 * Distribution): the body's `mediaType`, else what its shape says, as Distribution decides.
 */
import { MediaTypes } from './mediatypes.js';
import { isObject } from './fields.js';

export function detectMediaType(content: Buffer): string {
  let parsed: unknown;
  try {
    parsed = JSON.parse(content.toString());
  } catch {
    return 'application/octet-stream';
  }
  // `null`, a number or an array is JSON but no manifest
  if (!isObject(parsed)) return 'application/octet-stream';
  const doc: { mediaType?: unknown; schemaVersion?: unknown; manifests?: unknown; signatures?: unknown } = parsed;
  if (typeof doc.mediaType === 'string' && doc.mediaType !== '') return doc.mediaType;
  // Distribution stores a signed first-generation manifest's payload only: without signatures it is the unsigned type
  if (doc.schemaVersion === 1) return doc.signatures === undefined ? MediaTypes.dockerSchema1 : MediaTypes.dockerSignedSchema1;
  return doc.manifests !== undefined ? MediaTypes.ociIndex : MediaTypes.ociManifest;
}
