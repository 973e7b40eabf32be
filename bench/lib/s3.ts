/**
 * The S3 store of the S3 rows: the throw-away single-node Ceph radosgw of the tests
 * (test/helpers/ceph.ts, ceph-s3.sh: one mon, one memstore OSD, objects in RAM), one bucket, and a
 * key prefix (the registries' storage.s3.rootdirectory) for each registry. Fixtures are written
 * into the prefixes with the AWS SDK, in the layout both registries read
 * (<rootdirectory>/docker/registry/v2/...).
 */
import { execFile, execFileSync } from 'node:child_process';
import { Readable } from 'node:stream';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { CopyObjectCommand, DeleteObjectsCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import type { PatternBlob } from '../../test/helpers/berth-process.js';
import { CEPH_ACCESS_KEY, CEPH_SECRET_KEY, CEPH_TOOLS, startCeph, type CephS3 } from '../../test/helpers/ceph.js';
import { installHint, toolAvailable } from '../../test/helpers/tools.js';
import * as layout from '../../src/registry/layout.js';
import type { Digest } from '../../src/registry/digest.js';
import { TAGS_REPO, tagName, writeImage, type SmallImage } from './fixtures.js';

const run = promisify(execFile);

/** the first Ceph tool that is missing, with the command that installs it; undefined when all are there */
export function missingCephTool(): string | undefined {
  const missing = CEPH_TOOLS.find((tool) => !toolAvailable(tool));
  return missing === undefined ? undefined : `${missing} is missing (${installHint(missing)})`;
}

/** e.g. `Ceph radosgw 16.2.15 pacific` */
export function cephVersion(): string {
  try {
    const line = execFileSync('radosgw', ['--version'], { encoding: 'utf8' }).trim().split('\n')[0];
    const m = /ceph version (\S+) \([0-9a-f]+\) (\w+)/.exec(line);
    return m ? `Ceph radosgw ${m[1]} ${m[2]}` : line;
  } catch {
    return 'Ceph radosgw (version unknown)';
  }
}

export interface S3Store {
  ceph: CephS3;
  bucket: string;
  client: S3Client;
  /** a key prefix of the bucket: what the registry with storage.s3.rootdirectory `/${name}` sees */
  prefix(name: string): S3Prefix;
  /**
   * Runs radosgw's garbage collector now (`radosgw-admin gc process --include-all`): deleted and
   * overwritten objects otherwise stay in the memstore OSD's RAM for a minute or more.
   */
  reclaim(): Promise<void>;
  stop(): Promise<void>;
}

export async function startS3Store(memstoreBytes: number): Promise<S3Store> {
  const ceph = await startCeph({ memstoreBytes });
  try {
    const bucket = await ceph.createBucket('bench');
    const client = new S3Client({
      region: 'us-east-1',
      endpoint: ceph.endpoint,
      forcePathStyle: true,
      credentials: { accessKeyId: CEPH_ACCESS_KEY, secretAccessKey: CEPH_SECRET_KEY },
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    });
    return {
      ceph,
      bucket,
      client,
      prefix: (name) => new S3Prefix(client, bucket, name),
      async reclaim() {
        await run('radosgw-admin', ['-c', join(ceph.dir, 'ceph.conf'), 'gc', 'process', '--include-all'], { timeout: 120_000 }).catch(() => undefined);
      },
      async stop() {
        client.destroy();
        await ceph.stop();
      },
    };
  } catch (err) {
    await ceph.stop();
    throw err;
  }
}

/** runs `work` over `items` with at most `limit` in flight */
async function pool<T>(items: T[], limit: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const worker = async () => {
    while (next < items.length) await work(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, worker));
}

export class S3Prefix {
  constructor(
    readonly client: S3Client,
    readonly bucket: string,
    /** without slashes; the registry's rootdirectory is `/${name}` */
    readonly name: string,
  ) {}

  get rootdirectory(): string {
    return `/${this.name}`;
  }

  /** the object key of a storage path (/docker/registry/v2/...) */
  key(path: string): string {
    return `${this.name}${path}`;
  }

  async put(path: string, data: Buffer | string): Promise<void> {
    await this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: this.key(path), Body: data, ContentLength: Buffer.byteLength(data) }));
  }

  /** every object under the storage path `path` (a directory), in pages of 1000 */
  async deleteUnder(path: string): Promise<void> {
    const prefix = `${this.key(path).replace(/\/+$/, '')}/`;
    let token: string | undefined;
    do {
      const page = await this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, ContinuationToken: token }));
      const keys = (page.Contents ?? []).map((o) => ({ Key: o.Key! }));
      if (keys.length > 0) await this.client.send(new DeleteObjectsCommand({ Bucket: this.bucket, Delete: { Objects: keys, Quiet: true } }));
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
  }

  /** removes a pushed repository and its blobs, so the next push starts clean */
  async removePushed(repo: string, digests: string[]): Promise<void> {
    await this.deleteUnder(layout.repository(repo));
    for (const digest of digests) await this.deleteUnder(layout.blobDir(digest as Digest));
  }

  /** the small image in SMALL_REPO and TAGS_REPO, and `tags` tags of it in TAGS_REPO (what the listing reads: `current/link`) */
  async writeSmallFixtures(image: SmallImage, tags: number): Promise<void> {
    await writeImage((path, data) => this.put(path, data), image);
    const indices = Array.from({ length: tags }, (_, i) => i);
    await pool(indices, 32, (i) => this.put(layout.tagCurrentLink(TAGS_REPO, tagName(i)), image.manifestDigest));
  }

  /** uploads `blob` as a blob of this prefix, linked into `repo` (streamed: one PutObject) */
  async putBlob(repo: string, blob: PatternBlob): Promise<void> {
    const digest = blob.digest() as Digest;
    await this.client.send(
      new PutObjectCommand({ Bucket: this.bucket, Key: this.key(layout.blobData(digest)), Body: Readable.from(blob.chunks()), ContentLength: blob.size }),
    );
    await this.put(layout.layerLink(repo, digest), digest);
  }

  /** copies a blob of `from` (server-side CopyObject) into this prefix, linked into `repo` */
  async copyBlob(from: S3Prefix, repo: string, digest: string): Promise<void> {
    const path = layout.blobData(digest as Digest);
    await this.client.send(new CopyObjectCommand({ Bucket: this.bucket, Key: this.key(path), CopySource: `${this.bucket}/${from.key(path)}` }));
    await this.put(layout.layerLink(repo, digest as Digest), digest);
  }
}
