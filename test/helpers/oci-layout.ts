/**
 * An OCI image layout (https://github.com/opencontainers/image-spec/blob/main/image-layout.md)
 * with random gzip layers, for real clients (skopeo `oci:DIR:TAG`) to push: a single image built by
 * client-images.ts, described by its manifest digest and the digests of its config and layers.
 */
import { buildClientImage } from './client-images.js';

export interface LayoutImage {
  dir: string;
  tag: string;
  manifestDigest: string;
  /** digests of config and layers */
  blobDigests: string[];
}

export async function writeOCILayout(dir: string, options: { tag?: string; layerSizes: number[] }): Promise<LayoutImage> {
  // every layer random and gzipped (no cheap big layers): what skopeo pushes and the bench times
  const image = await buildClientImage(dir, { format: 'oci', layers: options.layerSizes, tag: options.tag, bigLayerThreshold: Infinity });
  return { dir, tag: image.tag, manifestDigest: image.digest, blobDigests: [...image.blobs.keys()] };
}
