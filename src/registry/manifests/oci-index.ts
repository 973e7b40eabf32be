/** The OCI image index: multi-platform images, and artifacts that group manifests. */
import { MediaTypes } from './mediatypes.js';
import { checkBodyMediaType, descriptorList, optionalAnnotations, optionalString, rejectForeignFields, requireDescriptor, requireSchemaVersion, type JSONObject } from './fields.js';
import type { ManifestContent } from './types.js';

export function parseOCIIndex(doc: JSONObject): ManifestContent {
  requireSchemaVersion(doc, 2);
  checkBodyMediaType(doc, [MediaTypes.ociIndex], false);
  rejectForeignFields(doc, ['config', 'layers'], 'image index');
  const manifests = descriptorList(doc, 'manifests');
  const subject = doc.subject === undefined ? undefined : requireDescriptor(doc.subject, 'subject');
  const artifactType = optionalString(doc, 'artifactType', '');
  const annotations = optionalAnnotations(doc, 'annotations', '');
  return {
    blobs: [],
    manifests,
    layersWithURLs: [],
    ...(subject && { subject }),
    ...(artifactType !== undefined && { artifactType }),
    ...(annotations && { annotations }),
  };
}
