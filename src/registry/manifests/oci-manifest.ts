/** The OCI image manifest, for images and for artifacts (OCI image-spec 1.1). */
import { LayerMediaTypes, MediaTypes } from './mediatypes.js';
import { checkBodyMediaType, descriptorList, optionalAnnotations, optionalString, rejectForeignFields, requireDescriptor, requireSchemaVersion, type JSONObject } from './fields.js';
import type { Descriptor, ManifestContent } from './types.js';

/** the layer types whose urls Distribution checks against its policy */
const URL_CHECKED_LAYERS: readonly string[] = [
  LayerMediaTypes.ociTar,
  LayerMediaTypes.ociTarGzip,
  LayerMediaTypes.ociNondistributableTar,
  LayerMediaTypes.ociNondistributableTarGzip,
];
const NONDISTRIBUTABLE_LAYERS: readonly string[] = [LayerMediaTypes.ociNondistributableTar, LayerMediaTypes.ociNondistributableTarGzip];

export function parseOCIManifest(doc: JSONObject): ManifestContent {
  requireSchemaVersion(doc, 2);
  // optional in OCI, but if present it must say what this is
  checkBodyMediaType(doc, [MediaTypes.ociManifest], false);
  rejectForeignFields(doc, ['manifests'], 'image manifest');
  const config = requireDescriptor(doc.config, 'config');
  // artifacts may have no layers at all
  const layers = descriptorList(doc, 'layers');
  const subject = doc.subject === undefined ? undefined : requireDescriptor(doc.subject, 'subject');
  const artifactType = optionalString(doc, 'artifactType', '');
  const annotations = optionalAnnotations(doc, 'annotations', '');

  const layersWithURLs = layers.filter((layer) => layer.urls?.length && URL_CHECKED_LAYERS.includes(layer.mediaType));
  // a non-distributable layer with urls is fetched from them; without urls it must be here
  const external = (layer: Descriptor) => layersWithURLs.includes(layer) && NONDISTRIBUTABLE_LAYERS.includes(layer.mediaType);
  return {
    blobs: [config, ...layers.filter((layer) => !external(layer))],
    manifests: [],
    layersWithURLs,
    ...(subject && { subject }),
    // OCI 1.1 referrers: artifactType, else the config's media type
    artifactType: artifactType ?? config.mediaType,
    ...(annotations && { annotations }),
  };
}
