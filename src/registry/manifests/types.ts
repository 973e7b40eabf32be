/** What parsing a manifest yields, whatever its format. */
import type { Digest } from '../digest.js';
import type { ManifestFormat } from './mediatypes.js';

export interface Platform {
  architecture: string;
  os: string;
  'os.version'?: string;
  'os.features'?: string[];
  variant?: string;
  features?: string[];
}

/** a content descriptor (OCI image-spec descriptor; docker's is a subset) */
export interface Descriptor {
  mediaType: string;
  digest: Digest;
  size: number;
  urls?: string[];
  annotations?: Record<string, string>;
  artifactType?: string;
  /** base64 of the embedded content */
  data?: string;
  /** children of an index or manifest list */
  platform?: Platform;
}

/** a blob the manifest needs; first-generation fsLayers carry no size */
export type BlobReference = Omit<Descriptor, 'size'> & { size?: number };

/** the format-specific part of a parse */
export interface ManifestContent {
  /** config and layers that must exist in the repository (foreign layers excluded) */
  blobs: BlobReference[];
  /** children of an index or list that must exist in the repository */
  manifests: Descriptor[];
  /** layers whose `urls` are subject to the urls allow/deny policy (see checkLayerURLs) */
  layersWithURLs: Descriptor[];
  subject?: Descriptor;
  artifactType?: string;
  annotations?: Record<string, string>;
  /** first generation only: the body's `name` and `tag` */
  name?: string;
  tag?: string;
}

export interface ParsedManifest extends ManifestContent {
  format: ManifestFormat;
  /** the type to store and to serve back as Content-Type */
  mediaType: string;
  /** canonical digest: of `payload`, sha256 unless parseManifest was told another algorithm */
  digest: Digest;
  /** the bytes the digest covers: the whole body, or for signed first generation the JWS payload */
  payload: Buffer;
}
