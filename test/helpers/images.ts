/**
 * Realistic images of every manifest format berth stores, built from random (gzipped) layers,
 * and the HTTP calls that push them the way clients do: blobs first, then children of a list or
 * index (by digest), then the manifest itself.
 *
 *     const image = buildImage('oci-manifest');
 *     const res = await pushImage(registry.url, 'my/repo', image, 'latest');   // 201
 *     // image.body / image.digest / image.mediaType are what GET must answer
 *
 * Building is pure (no network); nothing is shared between two builds, so every image has
 * fresh digests. Bodies are JSON with the three-space indent docker and Distribution write.
 */
import { gzipSync } from 'node:zlib';
import { randomBytes } from 'node:crypto';
import { digestOf, pushBlob, sha256 } from './blobs.js';
import { generateKey, signSchema1, type TestKey } from '../registry/manifests/sign-schema1.js';

/** the media types of the manifest formats (the `registry` spellings are the spec's twins of docker's) */
export const ManifestTypes = {
  dockerV2: 'application/vnd.docker.distribution.manifest.v2+json',
  registryV2: 'application/vnd.registry.distribution.manifest.v2+json',
  dockerList: 'application/vnd.docker.distribution.manifest.list.v2+json',
  registryList: 'application/vnd.registry.distribution.manifest.list.v2+json',
  ociManifest: 'application/vnd.oci.image.manifest.v1+json',
  ociIndex: 'application/vnd.oci.image.index.v1+json',
  dockerSignedV1: 'application/vnd.docker.distribution.manifest.v1+prettyjws',
  registrySignedV1: 'application/vnd.registry.distribution.manifest.v1+prettyjws',
} as const;

/** the Accept header of a client that takes every current manifest format (docker, containerd) */
export const ACCEPT_MANIFESTS = [ManifestTypes.ociManifest, ManifestTypes.ociIndex, ManifestTypes.dockerV2, ManifestTypes.dockerList].join(', ');

/**
 * What to build:
 * - `docker-v2` / `registry-v2`: a second-generation image manifest (config + gzipped layers),
 *   with the docker or the spec's media type;
 * - `docker-list` / `registry-list`: a manifest list of two platform images of the same spelling;
 * - `oci-manifest`: an OCI image manifest; `oci-index`: an OCI index of two OCI images;
 * - `oci-artifact`: an OCI manifest with `artifactType`, the empty config, one layer and a `subject`
 *   (as oras/notation push them);
 * - `schema1`: a signed first-generation manifest (`...v1+prettyjws`, one P-256 signature).
 */
export type ImageKind = 'docker-v2' | 'registry-v2' | 'docker-list' | 'registry-list' | 'oci-manifest' | 'oci-index' | 'oci-artifact' | 'schema1';

export const IMAGE_KINDS: readonly ImageKind[] = ['docker-v2', 'registry-v2', 'docker-list', 'registry-list', 'oci-manifest', 'oci-index', 'oci-artifact', 'schema1'];

/** kinds whose manifest lists children (the children must be in the repository before it) */
export const isIndexKind = (kind: ImageKind): boolean => kind === 'docker-list' || kind === 'registry-list' || kind === 'oci-index';

/** a content descriptor as manifests embed it */
export interface Descriptor {
  mediaType: string;
  digest: string;
  size: number;
  artifactType?: string;
  annotations?: Record<string, string>;
  platform?: { architecture: string; os: string; variant?: string };
}

/** a blob the manifest references, with its bytes */
export interface ImageBlob {
  mediaType: string;
  digest: string;
  size: number;
  data: Buffer<ArrayBuffer>;
}

export interface Image {
  kind: ImageKind;
  /** the Content-Type to push with; also the body's `mediaType` (schema1 bodies have none) */
  mediaType: string;
  /** the exact bytes to push, and that GET must serve back */
  body: Buffer<ArrayBuffer>;
  /** the canonical digest (sha256 unless ImageOptions.algorithm says otherwise) of the body, or of the JWS payload for schema1 */
  digest: string;
  /** schema1 only: the signed payload the digest covers */
  payload?: Buffer<ArrayBuffer>;
  /** blobs this manifest references itself (config first, then layers); foreign layers excluded */
  blobs: ImageBlob[];
  /** children of a list or index, in order */
  children: Image[];
  /** the descriptor a parent or a referrer uses for this manifest */
  descriptor: Descriptor;
  subject?: Descriptor;
  /** what the referrers API reports: artifactType, else (OCI manifest) the config's media type */
  artifactType?: string;
  annotations?: Record<string, string>;
}

export interface ImageOptions {
  /** number of layers (default 2) */
  layers?: number;
  /** uncompressed bytes per layer (default 2048) */
  layerSize?: number;
  /** schema1 only: the `name` and `tag` in the signed body (must equal the URL's on push) */
  name?: string;
  tag?: string;
  /** OCI kinds: the `subject` (a built image or a descriptor; for `oci-artifact` default: a random image digest) */
  subject?: Image | Descriptor;
  /** OCI kinds: `artifactType` (for `oci-artifact` default `application/vnd.example.sbom.v1+json`) */
  artifactType?: string;
  /** OCI kinds: manifest `annotations` */
  annotations?: Record<string, string>;
  /** docker-v2 / registry-v2: put a foreign (Windows base) layer with these URLs first */
  foreignLayerURLs?: string[];
  /** lists and indexes: the children (default: two fresh images, linux/amd64 and linux/arm64) */
  children?: Image[];
  /** the algorithm of every digest (manifest, blobs, children; diff_ids stay sha256); default sha256 */
  algorithm?: Algorithm;
}

export type Algorithm = 'sha256' | 'sha384' | 'sha512';

/** the OCI empty descriptor's content: `{}` */
const EMPTY_JSON = Buffer.from('{}');

const body = (doc: unknown): Buffer<ArrayBuffer> => Buffer.from(JSON.stringify(doc, null, 3));

/** a gzipped layer of `size` random bytes, with the diff_id (digest of the uncompressed tar) */
function randomLayer(mediaType: string, size: number, algorithm: Algorithm = 'sha256'): { blob: ImageBlob; diffID: string } {
  const raw = randomBytes(size);
  const data = Buffer.from(gzipSync(raw));
  return { blob: { mediaType, digest: digestOf(algorithm, data), size: data.length, data }, diffID: sha256(raw) };
}

function jsonBlob(mediaType: string, doc: unknown, algorithm: Algorithm = 'sha256'): ImageBlob {
  const data = Buffer.from(JSON.stringify(doc));
  return { mediaType, digest: digestOf(algorithm, data), size: data.length, data };
}

/** an image config as docker/buildkit write it */
function imageConfig(mediaType: string, diffIDs: string[], platform: { architecture: string; os: string; variant?: string }, algorithm: Algorithm = 'sha256'): ImageBlob {
  const created = new Date().toISOString();
  return jsonBlob(mediaType, {
    ...platform,
    created,
    config: {
      Env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'],
      Cmd: ['/bin/sh'],
      WorkingDir: '/',
      Labels: { 'org.opencontainers.image.title': 'berth test image', 'org.opencontainers.image.version': platform.architecture },
    },
    rootfs: { type: 'layers', diff_ids: diffIDs },
    history: diffIDs.map((_, i) => ({ created, created_by: `/bin/sh -c #(nop) ADD file:${i} in / ` })),
  }, algorithm);
}

const descriptorOf = (blob: ImageBlob) => ({ mediaType: blob.mediaType, digest: blob.digest, size: blob.size });

function finish(kind: ImageKind, mediaType: string, bytes: Buffer<ArrayBuffer>, rest: Omit<Image, 'kind' | 'mediaType' | 'body' | 'digest' | 'descriptor' | 'children'> & { children?: Image[] }, platform?: Descriptor['platform'], algorithm: Algorithm = 'sha256'): Image {
  const digest = digestOf(algorithm, rest.payload ?? bytes);
  const descriptor: Descriptor = { mediaType, digest, size: bytes.length };
  if (platform) descriptor.platform = platform;
  return { kind, mediaType, body: bytes, digest, descriptor, children: [], ...rest };
}

const PLATFORMS = [
  { architecture: 'amd64', os: 'linux' },
  { architecture: 'arm64', os: 'linux', variant: 'v8' },
];

function subjectDescriptor(subject: Image | Descriptor | undefined): Descriptor | undefined {
  if (subject === undefined) return undefined;
  const d = 'descriptor' in subject ? subject.descriptor : subject;
  return { mediaType: d.mediaType, digest: d.digest, size: d.size };
}

function dockerImage(kind: 'docker-v2' | 'registry-v2', options: ImageOptions, platform = PLATFORMS[0]): Image {
  const mediaType = kind === 'docker-v2' ? ManifestTypes.dockerV2 : ManifestTypes.registryV2;
  const layers = Array.from({ length: options.layers ?? 2 }, () => randomLayer('application/vnd.docker.image.rootfs.diff.tar.gzip', options.layerSize ?? 2048, options.algorithm));
  const config = imageConfig('application/vnd.docker.container.image.v1+json', layers.map((l) => l.diffID), platform, options.algorithm);
  const foreign = options.foreignLayerURLs
    ? [{ mediaType: 'application/vnd.docker.image.rootfs.foreign.diff.tar.gzip', digest: sha256(randomBytes(32)), size: 1718332879, urls: options.foreignLayerURLs }]
    : [];
  const doc = { schemaVersion: 2, mediaType, config: descriptorOf(config), layers: [...foreign, ...layers.map((l) => descriptorOf(l.blob))] };
  return finish(kind, mediaType, body(doc), { blobs: [config, ...layers.map((l) => l.blob)] }, platform, options.algorithm);
}

function ociImage(options: ImageOptions, platform = PLATFORMS[0]): Image {
  const layers = Array.from({ length: options.layers ?? 2 }, () => randomLayer('application/vnd.oci.image.layer.v1.tar+gzip', options.layerSize ?? 2048, options.algorithm));
  const config = imageConfig('application/vnd.oci.image.config.v1+json', layers.map((l) => l.diffID), platform, options.algorithm);
  const subject = subjectDescriptor(options.subject);
  const doc: Record<string, unknown> = { schemaVersion: 2, mediaType: ManifestTypes.ociManifest };
  if (options.artifactType) doc.artifactType = options.artifactType;
  doc.config = descriptorOf(config);
  doc.layers = layers.map((l) => descriptorOf(l.blob));
  if (subject) doc.subject = subject;
  if (options.annotations) doc.annotations = options.annotations;
  return finish(
    'oci-manifest',
    ManifestTypes.ociManifest,
    body(doc),
    { blobs: [config, ...layers.map((l) => l.blob)], subject, artifactType: options.artifactType ?? config.mediaType, annotations: options.annotations },
    platform,
    options.algorithm,
  );
}

function ociArtifact(options: ImageOptions): Image {
  const artifactType = options.artifactType ?? 'application/vnd.example.sbom.v1+json';
  const algorithm = options.algorithm ?? 'sha256';
  const empty: ImageBlob = { mediaType: 'application/vnd.oci.empty.v1+json', digest: digestOf(algorithm, EMPTY_JSON), size: EMPTY_JSON.length, data: Buffer.from(EMPTY_JSON) };
  const layer = jsonBlob('application/spdx+json', { spdxVersion: 'SPDX-2.3', name: 'sbom', id: randomBytes(8).toString('hex'), packages: [] }, algorithm);
  const subject = subjectDescriptor(options.subject) ?? { mediaType: ManifestTypes.ociManifest, digest: digestOf(algorithm, randomBytes(32)), size: 1051 };
  const annotations = options.annotations ?? { 'org.opencontainers.image.created': new Date().toISOString() };
  const doc = {
    schemaVersion: 2,
    mediaType: ManifestTypes.ociManifest,
    artifactType,
    config: { ...descriptorOf(empty), data: EMPTY_JSON.toString('base64') },
    layers: [{ ...descriptorOf(layer), annotations: { 'org.opencontainers.image.title': 'sbom.spdx.json' } }],
    subject,
    annotations,
  };
  return finish('oci-artifact', ManifestTypes.ociManifest, body(doc), { blobs: [empty, layer], subject, artifactType, annotations }, undefined, algorithm);
}

function list(kind: 'docker-list' | 'registry-list' | 'oci-index', options: ImageOptions): Image {
  const mediaType = kind === 'docker-list' ? ManifestTypes.dockerList : kind === 'registry-list' ? ManifestTypes.registryList : ManifestTypes.ociIndex;
  const children =
    options.children ??
    PLATFORMS.map((platform) => {
      const childOptions = { layers: options.layers, layerSize: options.layerSize, algorithm: options.algorithm };
      if (kind === 'oci-index') return ociImage(childOptions, platform);
      return dockerImage(kind === 'docker-list' ? 'docker-v2' : 'registry-v2', childOptions, platform);
    });
  const doc: Record<string, unknown> = { schemaVersion: 2, mediaType };
  if (kind === 'oci-index' && options.artifactType) doc.artifactType = options.artifactType;
  doc.manifests = children.map((c) => c.descriptor);
  const subject = kind === 'oci-index' ? subjectDescriptor(options.subject) : undefined;
  if (subject) doc.subject = subject;
  if (kind === 'oci-index' && options.annotations) doc.annotations = options.annotations;
  return finish(kind, mediaType, body(doc), {
    blobs: [],
    children,
    subject,
    artifactType: kind === 'oci-index' ? options.artifactType : undefined,
    annotations: kind === 'oci-index' ? options.annotations : undefined,
  }, undefined, options.algorithm);
}

let signingKey: TestKey | undefined;

function schema1(options: ImageOptions): Image {
  signingKey ??= generateKey('P-256');
  const layers = Array.from({ length: options.layers ?? 2 }, () => randomLayer('application/vnd.docker.container.image.rootfs.diff+x-gtar', options.layerSize ?? 2048).blob);
  // fsLayers and history run from the top layer down
  const ids = layers.map(() => randomBytes(32).toString('hex'));
  const manifest = {
    schemaVersion: 1,
    name: options.name ?? 'library/app',
    tag: options.tag ?? 'latest',
    architecture: 'amd64',
    fsLayers: [...layers].reverse().map((l) => ({ blobSum: l.digest })),
    history: [...ids].reverse().map((id, i, all) =>
      ({ v1Compatibility: JSON.stringify({ id, ...(i + 1 < all.length && { parent: all[i + 1] }), created: '2016-06-01T00:00:00Z', container_config: { Cmd: ['/bin/sh'] } }) })),
  };
  const signed = signSchema1(manifest, [{ key: signingKey, kid: true }]);
  const payload = Buffer.from(signed.payload);
  return finish('schema1', ManifestTypes.dockerSignedV1, Buffer.from(signed.body), { blobs: layers, payload });
}

/** a fresh image of `kind` (see ImageKind); options that do not apply to the kind are ignored */
export function buildImage(kind: ImageKind, options: ImageOptions = {}): Image {
  switch (kind) {
    case 'docker-v2':
    case 'registry-v2':
      return dockerImage(kind, options);
    case 'docker-list':
    case 'registry-list':
    case 'oci-index':
      return list(kind, options);
    case 'oci-manifest':
      return ociImage(options);
    case 'oci-artifact':
      return ociArtifact(options);
    case 'schema1':
      return schema1(options);
  }
}

/** PUT a manifest body; `contentType` undefined sends no Content-Type (the registry must look at the body) */
export function putManifest(base: string, name: string, reference: string, bytes: Buffer<ArrayBuffer>, contentType?: string): Promise<Response> {
  const headers: Record<string, string> = contentType === undefined ? {} : { 'content-type': contentType };
  return fetch(`${base}/v2/${name}/manifests/${reference}`, { method: 'PUT', body: bytes, headers });
}

/** pushes the image's own blobs and, recursively, its children's blobs and manifests (by digest); throws on any failure */
export async function pushContent(base: string, name: string, image: Image): Promise<void> {
  for (const blob of image.blobs) {
    const res = await pushBlob(base, name, blob.data, blob.digest);
    if (res.status !== 201) throw new Error(`pushing blob ${blob.digest} to ${name} answered ${res.status}: ${await res.text()}`);
  }
  for (const child of image.children) {
    await pushContent(base, name, child);
    const res = await putManifest(base, name, child.digest, child.body, child.mediaType);
    if (res.status !== 201) throw new Error(`pushing child manifest ${child.digest} to ${name} answered ${res.status}: ${await res.text()}`);
  }
}

/**
 * Pushes everything the image needs (pushContent), then the manifest to `reference` (a tag, or by
 * default its digest) with its own media type. Returns the manifest PUT's response unread, so a
 * test can assert on it; check `status` (201) yourself.
 */
export async function pushImage(base: string, name: string, image: Image, reference: string = image.digest): Promise<Response> {
  await pushContent(base, name, image);
  return putManifest(base, name, reference, image.body, image.mediaType);
}

/** like pushImage, but throws unless the manifest PUT answered 201 */
export async function pushImageOK(base: string, name: string, image: Image, reference: string = image.digest): Promise<Image> {
  const res = await pushImage(base, name, image, reference);
  if (res.status !== 201) throw new Error(`pushing ${image.kind} manifest to ${name}:${reference} answered ${res.status}: ${await res.text()}`);
  return image;
}
