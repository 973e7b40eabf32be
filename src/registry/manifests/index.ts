/**
 * Entry point for manifests: pick the format from the Content-Type (or, when that is generic,
 * from the body), validate, and report what the registry must check and store.
 */
import { digestBytes, type Algorithm } from '../digest.js';
import { isGenericContentType, manifestFormat, mediaTypeEssence, MediaTypes, supportedManifestMediaTypes, type ManifestFormat } from './mediatypes.js';
import { isObject, manifestInvalid, type JSONObject } from './fields.js';
import { parseSchema2 } from './schema2.js';
import { parseManifestList } from './manifestlist.js';
import { parseOCIManifest } from './oci-manifest.js';
import { parseOCIIndex } from './oci-index.js';
import { parseSchema1 } from './schema1.js';
import type { BlobReference, ManifestContent, ParsedManifest } from './types.js';

export type { BlobReference, Descriptor, ManifestContent, ParsedManifest, Platform } from './types.js';
export { checkLayerURLs, type LayerURLPolicy } from './layer-urls.js';
export { manifestReferences, referencesOf, type ManifestReferences, type ReferenceDescriptor } from './references.js';
export { LayerMediaTypes, MediaTypes, manifestFormat, mediaTypeEssence, mediaTypesOf, supportedManifestMediaTypes, type ManifestFormat } from './mediatypes.js';

/** the largest manifest berth accepts or caches, as in Distribution: a push, and a pull-through fill */
export const MANIFEST_LIMIT = 4 * 1024 * 1024;

function parseBody(body: Buffer): JSONObject {
  let text: string;
  try {
    text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(body);
  } catch {
    throw manifestInvalid('json', undefined, 'the body is not UTF-8');
  }
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    throw manifestInvalid('json', undefined, `the body is not JSON: ${(err as Error).message}`);
  }
  if (!isObject(doc)) throw manifestInvalid('json', undefined, 'the body must be a JSON object');
  return doc;
}

/**
 * Descriptors one manifest may list (layers, children, fsLayers together). No real image comes
 * near: a layer store stacks at most 127 layers, multi-platform indexes list tens of images and
 * BuildKit's cache indexes hundreds to a few thousand. Each reference costs storage reads when
 * the manifest is checked, so a document listing tens of thousands is refused before any I/O.
 */
export const MAX_REFERENCES = 10_000;

/** MANIFEST_INVALID when the body lists more than MAX_REFERENCES descriptors, before any is parsed */
function checkReferenceCount(doc: JSONObject): void {
  const fields = ['layers', 'manifests', 'fsLayers'] as const;
  const count = fields.reduce((sum, key) => sum + (Array.isArray(doc[key]) ? (doc[key] as unknown[]).length : 0), 0);
  if (count > MAX_REFERENCES) {
    throw manifestInvalid('references', undefined, `the manifest lists ${count} descriptors (layers, manifests and fsLayers together); the limit is ${MAX_REFERENCES}`, {
      references: count,
      limit: MAX_REFERENCES,
    });
  }
}

function unsupported(mediaType: string, source: string): never {
  throw manifestInvalid('mediaType', source === 'Content-Type' ? undefined : 'mediaType', `unsupported manifest media type ${JSON.stringify(mediaType)} (from the ${source}); supported: ${supportedManifestMediaTypes().join(', ')}`, {
    mediaType,
    supported: supportedManifestMediaTypes(),
  });
}

/** the format and the media type to store: the Content-Type when it names a format, else the body's own */
function chooseFormat(contentType: string | undefined, doc: JSONObject): { format: ManifestFormat; mediaType: string } {
  const header = contentType === undefined || isGenericContentType(contentType) ? undefined : mediaTypeEssence(contentType);
  const headerFormat = header === undefined ? undefined : (manifestFormat(header) ?? unsupported(header, 'Content-Type'));

  if (doc.mediaType !== undefined && typeof doc.mediaType !== 'string') throw manifestInvalid('type', 'mediaType', 'must be a string');
  const bodyType = doc.mediaType;
  const bodyFormat = bodyType === undefined ? undefined : manifestFormat(bodyType);

  if (header !== undefined && headerFormat !== undefined) {
    // twins (docker vs registry spellings) map to one format, so they never disagree here
    if (bodyType !== undefined && bodyFormat !== headerFormat) {
      throw manifestInvalid('mediaType', 'mediaType', `the Content-Type ${JSON.stringify(header)} and the body's mediaType ${JSON.stringify(bodyType)} name different manifest formats`, {
        contentType: header,
        mediaType: bodyType,
      });
    }
    return { format: headerFormat, mediaType: header };
  }
  if (bodyType !== undefined) return { format: bodyFormat ?? unsupported(bodyType, 'body'), mediaType: bodyType };
  // first-generation bodies carry no mediaType; Distribution parses them as signed by default
  if (doc.schemaVersion === 1) return { format: 'schema1', mediaType: MediaTypes.signedSchema1 };
  throw manifestInvalid('mediaType', undefined, 'cannot tell the manifest format: send a Content-Type naming it or a mediaType field in the body', {
    supported: supportedManifestMediaTypes(),
  });
}

/** one reference per digest: a blob listed twice is checked and reported once */
function uniqueBlobs(blobs: BlobReference[]): BlobReference[] {
  const seen = new Set<string>();
  return blobs.filter((blob) => !seen.has(blob.digest) && seen.add(blob.digest));
}

export interface ParseOptions {
  /** false: first-generation manifests are refused (compatibility.schema1.enabled), before any signature is checked */
  schema1?: boolean;
  /** aborted when the client is gone: the costly part (signature checks) stops with its reason */
  signal?: AbortSignal;
  /** the algorithm of the manifest's digest (default sha256) */
  algorithm?: Algorithm;
}

/**
 * Parse and validate a manifest body. Throws RegistryError: MANIFEST_INVALID (the detail names
 * the failed check and field), DIGEST_INVALID (a malformed digest inside the manifest),
 * MANIFEST_UNVERIFIED (signed first generation whose signatures do not hold).
 */
export async function parseManifest(contentType: string | undefined, body: Buffer, options: ParseOptions = {}): Promise<ParsedManifest> {
  const doc = parseBody(body);
  checkReferenceCount(doc);
  const { format, mediaType } = chooseFormat(contentType, doc);
  if (format === 'schema1' && options.schema1 === false) {
    throw manifestInvalid('mediaType', undefined, `first-generation (schema1) manifests are not accepted by this registry (compatibility.schema1.enabled is false): push the image as a schema 2 or OCI manifest`, {
      mediaType,
    });
  }
  let content: ManifestContent;
  let payload = body;
  switch (format) {
    case 'schema2':
      content = parseSchema2(doc);
      break;
    case 'manifest-list':
      content = parseManifestList(doc);
      break;
    case 'oci-manifest':
      content = parseOCIManifest(doc);
      break;
    case 'oci-index':
      content = parseOCIIndex(doc);
      break;
    case 'schema1':
      ({ payload, ...content } = await parseSchema1(body, doc, options.signal));
      break;
  }
  return { ...content, blobs: uniqueBlobs(content.blobs), format, mediaType, digest: digestBytes(options.algorithm ?? 'sha256', payload), payload };
}
