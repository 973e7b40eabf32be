/** Realistic manifests as docker, buildx, oras, notation and cosign push them. */
import { sha256 } from '../../../src/registry/digest.js';
import { RegistryError } from '../../../src/registry/errors.js';
import assert from 'node:assert/strict';

export const digestOf = (seed: string) => sha256(seed);

/** JSON as docker and Distribution write it: three-space indent */
export const toBody = (doc: unknown) => Buffer.from(JSON.stringify(doc, null, 3));

export function dockerImage() {
  return {
    schemaVersion: 2,
    mediaType: 'application/vnd.docker.distribution.manifest.v2+json',
    config: { mediaType: 'application/vnd.docker.container.image.v1+json', size: 1472, digest: digestOf('alpine config') },
    layers: [
      { mediaType: 'application/vnd.docker.image.rootfs.diff.tar.gzip', size: 3370706, digest: digestOf('alpine layer') },
      { mediaType: 'application/vnd.docker.image.rootfs.diff.tar.gzip', size: 1024, digest: digestOf('app layer') },
    ],
  };
}

export function dockerWindowsImage() {
  const image = dockerImage();
  image.layers.unshift({
    mediaType: 'application/vnd.docker.image.rootfs.foreign.diff.tar.gzip',
    size: 1718332879,
    digest: digestOf('windows base layer'),
    urls: ['https://mcr.microsoft.com/v2/windows/servercore/blobs/sha256:1234'],
  } as (typeof image.layers)[number]);
  return image;
}

export function dockerManifestList() {
  return {
    schemaVersion: 2,
    mediaType: 'application/vnd.docker.distribution.manifest.list.v2+json',
    manifests: [
      { mediaType: 'application/vnd.docker.distribution.manifest.v2+json', size: 528, digest: digestOf('amd64'), platform: { architecture: 'amd64', os: 'linux' } },
      { mediaType: 'application/vnd.docker.distribution.manifest.v2+json', size: 528, digest: digestOf('arm64'), platform: { architecture: 'arm64', os: 'linux', variant: 'v8' } },
      {
        mediaType: 'application/vnd.docker.distribution.manifest.v2+json',
        size: 1125,
        digest: digestOf('windows'),
        platform: { architecture: 'amd64', os: 'windows', 'os.version': '10.0.17763.5122' },
      },
    ],
  };
}

export function ociImage() {
  return {
    schemaVersion: 2,
    mediaType: 'application/vnd.oci.image.manifest.v1+json',
    config: { mediaType: 'application/vnd.oci.image.config.v1+json', digest: digestOf('oci config'), size: 7023 },
    layers: [
      { mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip', digest: digestOf('oci layer 1'), size: 32654 },
      { mediaType: 'application/vnd.oci.image.layer.v1.tar+zstd', digest: digestOf('oci layer 2'), size: 16724 },
    ],
    annotations: { 'org.opencontainers.image.created': '2024-03-01T10:00:00Z', 'org.opencontainers.image.source': 'https://example.com/app' },
  };
}

/** what notation pushes: an artifact on the empty config, pointing at the image it signs */
export function notationSignature() {
  return {
    schemaVersion: 2,
    mediaType: 'application/vnd.oci.image.manifest.v1+json',
    artifactType: 'application/vnd.cncf.notary.signature',
    config: { mediaType: 'application/vnd.oci.empty.v1+json', digest: 'sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a', size: 2, data: 'e30=' },
    layers: [{ mediaType: 'application/jose+json', digest: digestOf('jws envelope'), size: 2133 }],
    subject: { mediaType: 'application/vnd.oci.image.manifest.v1+json', digest: digestOf('signed image'), size: 1051 },
    annotations: { 'io.cncf.notary.x509chain.thumbprint#S256': '["b1c2"]', 'org.opencontainers.image.created': '2024-03-01T10:00:00Z' },
  };
}

/** oras attach with nothing but annotations: no layers at all */
export function orasEmptyArtifact() {
  return {
    schemaVersion: 2,
    mediaType: 'application/vnd.oci.image.manifest.v1+json',
    artifactType: 'application/vnd.example.sbom',
    config: { mediaType: 'application/vnd.oci.empty.v1+json', digest: 'sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a', size: 2 },
    layers: [],
    subject: { mediaType: 'application/vnd.oci.image.manifest.v1+json', digest: digestOf('described image'), size: 1051 },
  };
}

/** cosign's classic signature: no artifactType, so its config media type is what referrers report */
export function cosignSignature() {
  return {
    schemaVersion: 2,
    mediaType: 'application/vnd.oci.image.manifest.v1+json',
    config: { mediaType: 'application/vnd.oci.image.config.v1+json', size: 233, digest: digestOf('cosign config') },
    layers: [
      {
        mediaType: 'application/vnd.dev.cosign.simplesigning.v1+json',
        size: 250,
        digest: digestOf('simple signing'),
        annotations: { 'dev.cosignproject.cosign/signature': 'MEUCIQ...' },
      },
    ],
  };
}

/** buildx output: two platforms and their attestation manifests */
export function buildxIndex() {
  return {
    schemaVersion: 2,
    mediaType: 'application/vnd.oci.image.index.v1+json',
    manifests: [
      { mediaType: 'application/vnd.oci.image.manifest.v1+json', digest: digestOf('idx amd64'), size: 1051, platform: { architecture: 'amd64', os: 'linux' } },
      { mediaType: 'application/vnd.oci.image.manifest.v1+json', digest: digestOf('idx arm64'), size: 1051, platform: { architecture: 'arm64', os: 'linux', variant: 'v8' } },
      {
        mediaType: 'application/vnd.oci.image.manifest.v1+json',
        digest: digestOf('idx attestation'),
        size: 839,
        annotations: { 'vnd.docker.reference.digest': digestOf('idx amd64'), 'vnd.docker.reference.type': 'attestation-manifest' },
        platform: { architecture: 'unknown', os: 'unknown' },
      },
    ],
    annotations: { 'org.opencontainers.image.ref.name': 'latest' },
  };
}

/** `fn` rejects with a RegistryError of `code` whose detail has the given fields and whose message includes `text` */
export async function assertRegistryError(fn: () => unknown, code: string, expectDetail: Record<string, unknown>, text?: string | RegExp): Promise<RegistryError> {
  let caught: unknown;
  try {
    await fn();
  } catch (err) {
    caught = err;
  }
  assert.ok(caught instanceof RegistryError, `expected a RegistryError ${code}, got ${caught === undefined ? 'no error' : String(caught)}`);
  assert.equal(caught.code, code, `code (message: ${caught.message})`);
  const detail = caught.detail as Record<string, unknown>;
  for (const [key, value] of Object.entries(expectDetail)) assert.deepEqual(detail[key], value, `detail.${key} (message: ${caught.message})`);
  if (typeof text === 'string') assert.ok(caught.message.includes(text), `message ${JSON.stringify(caught.message)} should include ${JSON.stringify(text)}`);
  else if (text) assert.match(caught.message, text);
  return caught;
}
