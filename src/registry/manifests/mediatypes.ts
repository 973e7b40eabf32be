/**
 * Manifest media types and the one table of their equivalences (DESIGN section 4): the spec's
 * neutral `vnd.registry` spellings and the `vnd.docker` spellings real clients send name the
 * same format and are accepted as equals.
 */

export const MediaTypes = {
  schema2: 'application/vnd.registry.distribution.manifest.v2+json',
  dockerSchema2: 'application/vnd.docker.distribution.manifest.v2+json',
  manifestList: 'application/vnd.registry.distribution.manifest.list.v2+json',
  dockerManifestList: 'application/vnd.docker.distribution.manifest.list.v2+json',
  signedSchema1: 'application/vnd.registry.distribution.manifest.v1+prettyjws',
  dockerSignedSchema1: 'application/vnd.docker.distribution.manifest.v1+prettyjws',
  schema1: 'application/vnd.registry.distribution.manifest.v1+json',
  dockerSchema1: 'application/vnd.docker.distribution.manifest.v1+json',
  ociManifest: 'application/vnd.oci.image.manifest.v1+json',
  ociIndex: 'application/vnd.oci.image.index.v1+json',
} as const;

/** descriptor media types the manifest rules single out */
export const LayerMediaTypes = {
  dockerForeign: 'application/vnd.docker.image.rootfs.foreign.diff.tar.gzip',
  ociTar: 'application/vnd.oci.image.layer.v1.tar',
  ociTarGzip: 'application/vnd.oci.image.layer.v1.tar+gzip',
  ociNondistributableTar: 'application/vnd.oci.image.layer.nondistributable.v1.tar',
  ociNondistributableTarGzip: 'application/vnd.oci.image.layer.nondistributable.v1.tar+gzip',
  /** what Distribution reports for a first-generation fsLayer */
  schema1Layer: 'application/vnd.docker.container.image.rootfs.diff+x-gtar',
} as const;

export type ManifestFormat = 'schema2' | 'manifest-list' | 'schema1' | 'oci-manifest' | 'oci-index';

/**
 * Media type -> format. `v1+json` is parsed as the signed first-generation format: Distribution
 * registers no parser of its own for it and falls back to the signed one, so signatures are required.
 */
const FORMAT_OF: ReadonlyMap<string, ManifestFormat> = new Map([
  [MediaTypes.schema2, 'schema2'],
  [MediaTypes.dockerSchema2, 'schema2'],
  [MediaTypes.manifestList, 'manifest-list'],
  [MediaTypes.dockerManifestList, 'manifest-list'],
  [MediaTypes.signedSchema1, 'schema1'],
  [MediaTypes.dockerSignedSchema1, 'schema1'],
  [MediaTypes.schema1, 'schema1'],
  [MediaTypes.dockerSchema1, 'schema1'],
  [MediaTypes.ociManifest, 'oci-manifest'],
  [MediaTypes.ociIndex, 'oci-index'],
]);

/** Content-Types that say nothing about the manifest format */
const GENERIC_TYPES = new Set(['', 'application/json', 'application/octet-stream']);

/** the type without parameters, trimmed and lowercased: `A/B+json; charset=utf-8` -> `a/b+json` */
export function mediaTypeEssence(mediaType: string): string {
  return mediaType.split(';', 1)[0].trim().toLowerCase();
}

/** the manifest format a media type names, or undefined for anything else */
export function manifestFormat(mediaType: string): ManifestFormat | undefined {
  return FORMAT_OF.get(mediaTypeEssence(mediaType));
}

export function isGenericContentType(contentType: string): boolean {
  return GENERIC_TYPES.has(mediaTypeEssence(contentType));
}

/** every media type that names `format` (for Accept matching: twins are equals) */
export function mediaTypesOf(format: ManifestFormat): string[] {
  return [...FORMAT_OF].filter(([, f]) => f === format).map(([type]) => type);
}

/** every manifest media type berth accepts */
export function supportedManifestMediaTypes(): string[] {
  return [...FORMAT_OF.keys()];
}
