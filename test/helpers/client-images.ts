/**
 * Images on disk for real clients (skopeo, podman, ...): layers are real tar archives (one file
 * each) compressed with gzip, a config with the right diff_ids, an image manifest, and optionally
 * a multi-architecture index. Written as an OCI image layout (`oci:DIR:TAG`) or as skopeo's
 * `dir:` format (Directory Transport Version 1.1: `manifest.json`, `<hex>.manifest.json` for the
 * instances of a list, blobs named by their hex digest).
 *
 *     const img = await buildClientImage(join(work, 'src'), { format: 'oci', layers: [1024, 4096] });
 *     // img.ref is 'oci:<dir>:latest'; img.digest the top manifest's digest; img.files every file
 *
 * Small layers are random bytes gzipped at level 1; a layer of `bigLayerThreshold` bytes or more
 * is generated from a repeated random MiB and stored with gzip level 0 (no compression work), and
 * streamed to disk, never held whole: a 200 MiB layer costs little CPU and no memory.
 */
import { createHash, randomBytes, type Hash } from 'node:crypto';
import { createWriteStream } from 'node:fs';
import { mkdir, readdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable, Transform } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { createGzip, gzipSync } from 'node:zlib';
import { pushBlob } from './blobs.js';
import { putManifest } from './images.js';

export const MiB = 1024 * 1024;

export type ImageFormat = 'oci' | 'dir';

export interface ClientBlob {
  mediaType: string;
  digest: string;
  size: number;
}

export interface ClientManifest {
  mediaType: string;
  digest: string;
  bytes: Buffer;
  platform?: { architecture: string; os: string; variant?: string };
  config: ClientBlob;
  layers: ClientBlob[];
}

export interface ClientImage {
  format: ImageFormat;
  dir: string;
  tag: string;
  /** the reference skopeo takes: `oci:<dir>:<tag>` or `dir:<dir>` */
  ref: string;
  /** the top manifest (an image manifest, or the index / manifest list) */
  mediaType: string;
  digest: string;
  bytes: Buffer;
  /** the image manifests: one, or the instances of the index in order */
  manifests: ClientManifest[];
  /** digest -> size of every blob (configs and layers of every instance) */
  blobs: Map<string, number>;
}

export interface ClientImageOptions {
  format: ImageFormat;
  /** uncompressed payload size of each layer's single file (one image, or each instance of an index) */
  layers: number[];
  /** build an index (OCI) / manifest list (docker) with one instance per platform */
  platforms?: { architecture: string; os: string; variant?: string }[];
  tag?: string;
  /** layers at least this big are generated cheaply and stored with gzip level 0 (default 16 MiB) */
  bigLayerThreshold?: number;
}

const TYPES = {
  oci: {
    manifest: 'application/vnd.oci.image.manifest.v1+json',
    index: 'application/vnd.oci.image.index.v1+json',
    config: 'application/vnd.oci.image.config.v1+json',
    layer: 'application/vnd.oci.image.layer.v1.tar+gzip',
  },
  dir: {
    manifest: 'application/vnd.docker.distribution.manifest.v2+json',
    index: 'application/vnd.docker.distribution.manifest.list.v2+json',
    config: 'application/vnd.docker.container.image.v1+json',
    layer: 'application/vnd.docker.image.rootfs.diff.tar.gzip',
  },
} as const;

const digestOf = (data: Buffer | string) => `sha256:${createHash('sha256').update(data).digest('hex')}`;
const hexOf = (digest: string) => digest.slice('sha256:'.length);

/** a ustar header for one regular file */
export function tarHeader(name: string, size: number): Buffer {
  const h = Buffer.alloc(512);
  h.write(name, 0, 100, 'utf8');
  h.write('0000644\0', 100, 'ascii');
  h.write('0000000\0', 108, 'ascii');
  h.write('0000000\0', 116, 'ascii');
  h.write(size.toString(8).padStart(11, '0') + '\0', 124, 'ascii');
  h.write(Math.floor(Date.UTC(2024, 0, 1) / 1000).toString(8).padStart(11, '0') + '\0', 136, 'ascii');
  h.write('        ', 148, 'ascii');
  h.write('0', 156, 'ascii');
  h.write('ustar\0', 257, 'ascii');
  h.write('00', 263, 'ascii');
  let sum = 0;
  for (const byte of h) sum += byte;
  h.write(sum.toString(8).padStart(6, '0') + '\0 ', 148, 'ascii');
  return h;
}

/** the tar archive of one file with `size` bytes, as chunks; the file's bytes come from `payload` */
function* tarChunks(name: string, size: number, payload: (offset: number, length: number) => Buffer): Generator<Buffer> {
  yield tarHeader(name, size);
  for (let pos = 0; pos < size; pos += MiB) yield payload(pos, Math.min(MiB, size - pos));
  const pad = (512 - (size % 512)) % 512;
  yield Buffer.alloc(pad + 1024);
}

function hashing(hash: Hash, count?: { n: number }): Transform {
  return new Transform({
    transform(chunk: Buffer, _enc, cb) {
      hash.update(chunk);
      if (count) count.n += chunk.length;
      cb(null, chunk);
    },
  });
}

/** writes a gzipped one-file tar into `blobDir` under its hex digest; returns its descriptor and diff_id */
async function writeLayer(blobDir: string, mediaType: string, size: number, index: number, big: boolean): Promise<{ blob: ClientBlob; diffID: string }> {
  const name = `layer-${index}-${randomBytes(4).toString('hex')}.bin`;
  if (!big) {
    const tar = Buffer.concat([...tarChunks(name, size, (_, length) => randomBytes(length))]);
    const data = gzipSync(tar, { level: 1 });
    const digest = digestOf(data);
    await writeFile(join(blobDir, hexOf(digest)), data);
    return { blob: { mediaType, digest, size: data.length }, diffID: digestOf(tar) };
  }
  // cheap content: one random MiB, stamped with its position so no two MiB are equal
  const base = randomBytes(MiB);
  const payload = (offset: number, length: number) => {
    const out = Buffer.from(base.subarray(0, length));
    out.writeUInt32LE(offset / MiB, 0);
    return out;
  };
  const raw = createHash('sha256');
  const compressed = createHash('sha256');
  const count = { n: 0 };
  const tmp = join(blobDir, `.tmp-${randomBytes(6).toString('hex')}`);
  await pipeline(Readable.from(tarChunks(name, size, payload)), hashing(raw), createGzip({ level: 0 }), hashing(compressed, count), createWriteStream(tmp));
  const digest = `sha256:${compressed.digest('hex')}`;
  await rename(tmp, join(blobDir, hexOf(digest)));
  return { blob: { mediaType, digest, size: count.n }, diffID: `sha256:${raw.digest('hex')}` };
}

const DEFAULT_PLATFORM = { architecture: 'amd64', os: 'linux' };

async function writeImageManifest(blobDir: string, format: ImageFormat, layerSizes: number[], platform: ClientManifest['platform'], threshold: number): Promise<ClientManifest> {
  const types = TYPES[format];
  const layers: ClientBlob[] = [];
  const diffIDs: string[] = [];
  for (const [i, size] of layerSizes.entries()) {
    const { blob, diffID } = await writeLayer(blobDir, types.layer, size, i, size >= threshold);
    layers.push(blob);
    diffIDs.push(diffID);
  }
  const created = new Date().toISOString();
  const configBytes = Buffer.from(
    JSON.stringify({
      ...(platform ?? DEFAULT_PLATFORM),
      created,
      config: { Env: ['PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin'], Cmd: ['/bin/sh'] },
      rootfs: { type: 'layers', diff_ids: diffIDs },
      history: diffIDs.map((_, i) => ({ created, created_by: `ADD layer-${i} /` })),
    }),
  );
  const config: ClientBlob = { mediaType: types.config, digest: digestOf(configBytes), size: configBytes.length };
  await writeFile(join(blobDir, hexOf(config.digest)), configBytes);
  const bytes = Buffer.from(JSON.stringify({ schemaVersion: 2, mediaType: types.manifest, config, layers }, null, 3));
  return { mediaType: types.manifest, digest: digestOf(bytes), bytes, platform, config, layers };
}

/** builds an image (or an index of images) as `options.format` in `dir` (created) */
export async function buildClientImage(dir: string, options: ClientImageOptions): Promise<ClientImage> {
  const { format } = options;
  const tag = options.tag ?? 'latest';
  const threshold = options.bigLayerThreshold ?? 16 * MiB;
  const blobDir = format === 'oci' ? join(dir, 'blobs/sha256') : dir;
  await mkdir(blobDir, { recursive: true });
  const types = TYPES[format];

  const platforms = options.platforms;
  const manifests: ClientManifest[] = [];
  for (const platform of platforms ?? [undefined]) manifests.push(await writeImageManifest(blobDir, format, options.layers, platform, threshold));

  let top: { mediaType: string; digest: string; bytes: Buffer };
  if (platforms) {
    const bytes = Buffer.from(
      JSON.stringify(
        { schemaVersion: 2, mediaType: types.index, manifests: manifests.map((m) => ({ mediaType: m.mediaType, digest: m.digest, size: m.bytes.length, platform: m.platform })) },
        null,
        3,
      ),
    );
    top = { mediaType: types.index, digest: digestOf(bytes), bytes };
  } else {
    top = manifests[0];
  }

  if (format === 'oci') {
    for (const m of [...(platforms ? manifests : []), top]) await writeFile(join(blobDir, hexOf(m.digest)), m.bytes);
    await writeFile(
      join(dir, 'index.json'),
      JSON.stringify({ schemaVersion: 2, manifests: [{ mediaType: top.mediaType, digest: top.digest, size: top.bytes.length, annotations: { 'org.opencontainers.image.ref.name': tag } }] }),
    );
    await writeFile(join(dir, 'oci-layout'), JSON.stringify({ imageLayoutVersion: '1.0.0' }));
  } else {
    await writeFile(join(dir, 'version'), 'Directory Transport Version: 1.1\n');
    await writeFile(join(dir, 'manifest.json'), top.bytes);
    if (platforms) for (const m of manifests) await writeFile(join(dir, `${hexOf(m.digest)}.manifest.json`), m.bytes);
  }

  const blobs = new Map<string, number>();
  for (const m of manifests) for (const b of [m.config, ...m.layers]) blobs.set(b.digest, b.size);
  return { format, dir, tag, ref: format === 'oci' ? `oci:${dir}:${tag}` : `dir:${dir}`, ...top, manifests, blobs };
}

/** where a blob of `image` lives on disk */
export function blobPath(image: Pick<ClientImage, 'format' | 'dir'>, digest: string): string {
  return image.format === 'oci' ? join(image.dir, 'blobs/sha256', hexOf(digest)) : join(image.dir, hexOf(digest));
}

/** every regular file of a directory tree, relative paths, sorted */
export async function listFiles(dir: string): Promise<string[]> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true });
  return entries
    .filter((e) => e.isFile())
    .map((e) => join(e.parentPath ?? e.path, e.name).slice(dir.length + 1))
    .sort();
}

/** pushes an image built on disk over plain HTTP (small images: blobs are read whole): blobs, instances by digest, then the top manifest by tag */
export async function pushClientImage(base: string, repo: string, image: ClientImage, tag: string): Promise<void> {
  for (const digest of image.blobs.keys()) {
    const res = await pushBlob(base, repo, Buffer.from(await readFile(blobPath(image, digest))), digest);
    if (res.status !== 201) throw new Error(`pushing ${digest} to ${repo}: ${res.status} ${await res.text()}`);
  }
  const put = async (reference: string, bytes: Buffer, type: string) => {
    const res = await putManifest(base, repo, reference, Buffer.from(bytes), type);
    if (res.status !== 201) throw new Error(`pushing manifest ${repo}:${reference}: ${res.status} ${await res.text()}`);
  };
  for (const m of image.manifests) if (m.digest !== image.digest) await put(m.digest, m.bytes, m.mediaType);
  await put(tag, image.bytes, image.mediaType);
}
