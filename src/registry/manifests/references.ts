/**
 * What a stored manifest points at, in every format: an index's or list's children, an image's
 * config and layers (a first generation manifest's fsLayers), and its subject. Read from the JSON
 * without validating it (it was validated when pushed, or written by Distribution), synchronously
 * and without verifying signatures, so it is cheap enough for every notification and delete.
 * Unreadable content or fields yield nothing.
 */
import { isObject } from './fields.js';
import { LayerMediaTypes } from './mediatypes.js';

/** a descriptor as a stored manifest gives it: only the digest is sure to be there */
export interface ReferenceDescriptor {
  mediaType?: string;
  digest: string;
  size?: number;
}

export interface ManifestReferences {
  /** an index's or list's children */
  manifests: ReferenceDescriptor[];
  config?: ReferenceDescriptor;
  /** layers, or a first generation manifest's fsLayers (which carry no size) */
  layers: ReferenceDescriptor[];
  subject?: ReferenceDescriptor;
}

export function referencesOf(content: Buffer): ManifestReferences {
  let doc: unknown;
  try {
    doc = JSON.parse(content.toString('utf8'));
  } catch {
    doc = undefined;
  }
  if (!isObject(doc)) return { manifests: [], layers: [] };
  const fsLayers = list(doc.fsLayers).flatMap((layer) => {
    const digest = isObject(layer) ? layer.blobSum : undefined;
    return typeof digest === 'string' ? [{ mediaType: LayerMediaTypes.schema1Layer, digest }] : [];
  });
  const config = descriptor(doc.config);
  const subject = descriptor(doc.subject);
  return {
    manifests: descriptors(doc.manifests),
    ...(config && { config }),
    layers: [...descriptors(doc.layers), ...fsLayers],
    ...(subject && { subject }),
  };
}

function list(value: unknown): unknown[] {
  return Array.isArray(value) ? value : [];
}

function descriptors(value: unknown): ReferenceDescriptor[] {
  return list(value).flatMap((item) => descriptor(item) ?? []);
}

function descriptor(value: unknown): ReferenceDescriptor | undefined {
  if (!isObject(value) || typeof value.digest !== 'string') return undefined;
  return {
    ...(typeof value.mediaType === 'string' && { mediaType: value.mediaType }),
    digest: value.digest,
    ...(typeof value.size === 'number' && { size: value.size }),
  };
}

/**
 * The descriptors a manifest references, as Distribution lists them in events: an index's or
 * list's children, an image's config and layers (not its subject). Unreadable content yields none.
 */
export function manifestReferences(content: Buffer): ReferenceDescriptor[] {
  const { manifests, config, layers } = referencesOf(content);
  return [...manifests, ...(config ? [config] : []), ...layers];
}
