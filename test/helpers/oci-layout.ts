/**
 * Writes an OCI image layout (https://github.com/opencontainers/image-spec/blob/main/image-layout.md)
 * with random gzip layers, for real clients (skopeo `oci:DIR:TAG`) to push.
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';

export interface LayoutImage {
  dir: string;
  tag: string;
  manifestDigest: string;
  /** digests of config and layers */
  blobDigests: string[];
}

const digestOf = (data: Buffer) => `sha256:${createHash('sha256').update(data).digest('hex')}`;

export async function writeOCILayout(dir: string, options: { tag?: string; layerSizes: number[] }): Promise<LayoutImage> {
  const tag = options.tag ?? 'latest';
  const blobs = join(dir, 'blobs/sha256');
  await mkdir(blobs, { recursive: true });
  const put = async (data: Buffer) => {
    const digest = digestOf(data);
    await writeFile(join(blobs, digest.slice(7)), data);
    return { digest, size: data.length };
  };
  const layers = [];
  const diffIds = [];
  for (const size of options.layerSizes) {
    const raw = randomBytes(size);
    diffIds.push(digestOf(raw));
    layers.push({ mediaType: 'application/vnd.oci.image.layer.v1.tar+gzip', ...(await put(gzipSync(raw, { level: 1 }))) });
  }
  const config = { mediaType: 'application/vnd.oci.image.config.v1+json', ...(await put(Buffer.from(JSON.stringify({ architecture: 'amd64', os: 'linux', rootfs: { type: 'layers', diff_ids: diffIds }, config: {} })))) };
  const manifest = await put(Buffer.from(JSON.stringify({ schemaVersion: 2, mediaType: 'application/vnd.oci.image.manifest.v1+json', config, layers })));
  await writeFile(
    join(dir, 'index.json'),
    JSON.stringify({ schemaVersion: 2, manifests: [{ mediaType: 'application/vnd.oci.image.manifest.v1+json', ...manifest, annotations: { 'org.opencontainers.image.ref.name': tag } }] }),
  );
  await writeFile(join(dir, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
  return { dir, tag, manifestDigest: manifest.digest, blobDigests: [config.digest, ...layers.map((l) => l.digest)] };
}
