/** The second-generation manifest list (`...distribution.manifest.list.v2+json`), docker's multi-platform image. */
import { MediaTypes } from './mediatypes.js';
import { checkBodyMediaType, descriptorList, rejectForeignFields, requireSchemaVersion, type JSONObject } from './fields.js';
import type { ManifestContent } from './types.js';

export function parseManifestList(doc: JSONObject): ManifestContent {
  requireSchemaVersion(doc, 2);
  checkBodyMediaType(doc, [MediaTypes.manifestList, MediaTypes.dockerManifestList], true);
  rejectForeignFields(doc, ['config', 'layers'], 'manifest list');
  return { blobs: [], manifests: descriptorList(doc, 'manifests'), layersWithURLs: [] };
}
