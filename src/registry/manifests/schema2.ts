/** The second-generation image manifest (`...distribution.manifest.v2+json`). */
import { LayerMediaTypes, MediaTypes } from './mediatypes.js';
import { checkBodyMediaType, descriptorList, manifestInvalid, rejectForeignFields, requireDescriptor, requireSchemaVersion, type JSONObject } from './fields.js';
import type { ManifestContent } from './types.js';

export function parseSchema2(doc: JSONObject): ManifestContent {
  requireSchemaVersion(doc, 2);
  // Distribution requires the body to name its type; docker always sends it
  checkBodyMediaType(doc, [MediaTypes.schema2, MediaTypes.dockerSchema2], true);
  rejectForeignFields(doc, ['manifests'], 'image manifest');
  const config = requireDescriptor(doc.config, 'config');
  const layers = descriptorList(doc, 'layers');

  // foreign layers are fetched by clients from their urls, so the registry need not hold them
  const foreign = layers.filter((layer) => layer.mediaType === LayerMediaTypes.dockerForeign);
  foreign.forEach((layer) => {
    if (!layer.urls?.length) {
      const index = layers.indexOf(layer);
      throw manifestInvalid('urls', `layers[${index}].urls`, 'a foreign layer must list at least one URL', { digest: layer.digest });
    }
  });
  return {
    blobs: [config, ...layers.filter((layer) => !foreign.includes(layer))],
    manifests: [],
    layersWithURLs: foreign,
  };
}
