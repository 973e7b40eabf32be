/**
 * What cosign 2 writes, as far as a verifier needs it. Both places hold the same manifest: an OCI
 * image manifest whose layers are simple-signing payloads (`application/vnd.dev.cosign.simplesigning.v1+json`),
 * each with its base64 signature in the `dev.cosignproject.cosign/signature` annotation.
 * - the tag scheme: the manifest is tagged `sha256-<hex>.sig` in the image's repository;
 * - OCI 1.1 (`--registry-referrers-mode=oci-1-1`): the manifest has the image as `subject` and
 *   the config media type `application/vnd.dev.cosign.artifact.sig.v1+json`, which the referrers
 *   API reports as its artifactType (cosign 2.5 sets no `artifactType` field).
 * The payload names the image: `critical.image.docker-manifest-digest` must be the digest pulled,
 * or a signature of another image would be replayed onto this one.
 */
import type { Digest } from '../../registry/digest.js';

export const SIGNATURE_ARTIFACT_TYPE = 'application/vnd.dev.cosign.artifact.sig.v1+json';
export const SIMPLE_SIGNING = 'application/vnd.dev.cosign.simplesigning.v1+json';
export const SIGNATURE_ANNOTATION = 'dev.cosignproject.cosign/signature';
/** a simple-signing payload is a few hundred bytes; a larger layer is not read */
export const PAYLOAD_LIMIT = 64 * 1024;

/** the tag cosign's tag scheme gives the signature of `digest` */
export function signatureTag(digest: Digest): string {
  return `${digest.replace(':', '-')}.sig`;
}

/** the tags cosign gives signatures, attestations and SBOMs: `sha256-<hex>.sig|.att|.sbom` */
export function isCosignTag(tag: string): boolean {
  return /^sha(256|384|512)-[0-9a-f]{64,128}\.(sig|att|sbom)$/.test(tag);
}

export interface SignedPayload {
  /** the layer (payload blob) digest */
  digest: Digest;
  size: number;
  /** the signature's bytes */
  signature: Buffer;
}

/** the signed layers of a signature manifest; none when it is not one */
export function signedLayers(manifest: unknown): SignedPayload[] {
  const layers = (manifest as { layers?: unknown })?.layers;
  if (!Array.isArray(layers)) return [];
  const out: SignedPayload[] = [];
  for (const layer of layers as { mediaType?: unknown; digest?: unknown; size?: unknown; annotations?: Record<string, unknown> }[]) {
    const signature = layer?.annotations?.[SIGNATURE_ANNOTATION];
    if (layer?.mediaType !== SIMPLE_SIGNING || typeof signature !== 'string' || typeof layer.digest !== 'string' || typeof layer.size !== 'number') continue;
    if (layer.size > PAYLOAD_LIMIT) continue;
    out.push({ digest: layer.digest as Digest, size: layer.size, signature: Buffer.from(signature, 'base64') });
  }
  return out;
}

/** does the simple-signing payload name `digest` as the signed image? */
export function payloadNames(payload: Buffer, digest: Digest): boolean {
  try {
    const critical = (JSON.parse(payload.toString('utf8')) as { critical?: { image?: Record<string, unknown>; type?: unknown } }).critical;
    return critical?.type === 'cosign container image signature' && critical.image?.['docker-manifest-digest'] === digest;
  } catch {
    return false;
  }
}

/** layer media types of what is attached to an image rather than an image: attestations and SBOMs */
const ATTACHED_LAYERS = [SIMPLE_SIGNING, 'application/vnd.dsse.envelope.v1+json', 'application/vnd.in-toto+json', 'text/spdx', 'text/spdx+json', 'text/spdx+xml', 'application/vnd.cyclonedx', 'application/vnd.cyclonedx+json', 'application/vnd.cyclonedx+xml', 'application/vnd.syft+json'];
const IMAGE_CONFIGS = ['application/vnd.oci.image.config.v1+json', 'application/vnd.docker.container.image.v1+json'];

/**
 * Is this manifest something attached to an image (a signature, attestation, SBOM or other
 * artifact) that no container runtime would run? Those can always be pulled. Judged by content:
 * a config that is no image config (cosign's OCI 1.1 signatures, ORAS artifacts), or layers that
 * are all signatures, attestations or SBOMs (cosign's `.sig`/`.att`/`.sbom` manifests). Not by a
 * `sha256-<hex>.sig` tag, a `subject` or an `artifactType`: anyone who may push can put those on
 * a runnable image, and would then get it past the policy.
 */
export function isAttachment(manifest: unknown): boolean {
  const m = manifest as { config?: { mediaType?: unknown }; layers?: { mediaType?: unknown }[] };
  if (m === null || typeof m !== 'object') return false;
  if (m.config && typeof m.config.mediaType === 'string' && !IMAGE_CONFIGS.includes(m.config.mediaType)) return true;
  return Array.isArray(m.layers) && m.layers.length > 0 && m.layers.every((l) => typeof l?.mediaType === 'string' && ATTACHED_LAYERS.includes(l.mediaType));
}
