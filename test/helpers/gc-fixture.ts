/**
 * A storage root written straight to disk in Distribution's layout for garbage-collection tests
 * and the bench row: `repositories` repositories of three images each (config, a layer of their
 * own and a base layer every image shares), the third image of each deleted as a manifest DELETE
 * leaves it (blobs and layer links stay; revision and tag go).
 */
import { createHash, randomBytes } from 'node:crypto';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export const V2 = 'docker/registry/v2';
const sha = (data: Buffer) => `sha256:${createHash('sha256').update(data).digest('hex')}`;
const hex = (digest: string) => digest.slice(7);

async function put(root: string, path: string, data: Buffer | string): Promise<void> {
  const file = join(root, V2, path);
  await mkdir(join(file, '..'), { recursive: true });
  await writeFile(file, data);
}

async function blob(root: string, data: Buffer): Promise<string> {
  const digest = sha(data);
  await put(root, `blobs/sha256/${hex(digest).slice(0, 2)}/${hex(digest)}/data`, data);
  return digest;
}

/** writes the fixture; returns how many images and blobs it holds */
export async function writeGcFixture(root: string, repositories: number): Promise<{ images: number; deleted: number; blobs: number }> {
  const base = await blob(root, randomBytes(512));
  let images = 0;
  let deleted = 0;
  let blobs = 1;
  for (let r = 0; r < repositories; r++) {
    const repo = `bench/gc/r${String(r).padStart(5, '0')}`;
    const writes: Promise<unknown>[] = [];
    for (let i = 0; i < 3; i++) {
      const config = await blob(root, Buffer.from(JSON.stringify({ architecture: 'amd64', os: 'linux', rootfs: { type: 'layers', diff_ids: [] }, nonce: randomBytes(8).toString('hex') })));
      const own = await blob(root, randomBytes(256));
      const layer = (digest: string, size: number) => ({ mediaType: 'application/vnd.docker.image.rootfs.diff.tar.gzip', size, digest });
      const manifest = Buffer.from(
        JSON.stringify({
          schemaVersion: 2,
          mediaType: 'application/vnd.docker.distribution.manifest.v2+json',
          config: { mediaType: 'application/vnd.docker.container.image.v1+json', size: 100, digest: config },
          layers: [layer(base, 512), layer(own, 256)],
        }),
      );
      const digest = await blob(root, manifest);
      blobs += 3;
      images++;
      for (const d of [config, own, base]) writes.push(put(root, `repositories/${repo}/_layers/sha256/${hex(d)}/link`, d));
      if (i === 2) {
        deleted++; // deleted through the API: no revision link, no tag
        continue;
      }
      writes.push(put(root, `repositories/${repo}/_manifests/revisions/sha256/${hex(digest)}/link`, digest));
      writes.push(put(root, `repositories/${repo}/_manifests/tags/v${i}/current/link`, digest));
      writes.push(put(root, `repositories/${repo}/_manifests/tags/v${i}/index/sha256/${hex(digest)}/link`, digest));
    }
    await Promise.all(writes);
  }
  return { images, deleted, blobs };
}

/** blobs with data under the root's blobs/ */
export async function countBlobs(root: string): Promise<number> {
  let n = 0;
  for (const prefix of await readdir(join(root, V2, 'blobs/sha256'))) {
    for (const name of await readdir(join(root, V2, 'blobs/sha256', prefix))) {
      const inside: string[] = await readdir(join(root, V2, 'blobs/sha256', prefix, name)).catch(() => []);
      if (inside.includes('data')) n++;
    }
  }
  return n;
}
