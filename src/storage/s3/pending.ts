/**
 * The state of a file whose writer was closed but not committed, so that any instance (or this
 * one after a restart) continues it: a small object next to the file's key, `<key>~pending`,
 * whose body is the tail (the bytes not yet in a part, under the 5 MiB minimum part size) and
 * whose metadata names the open multipart upload, how many of its parts hold the file's start,
 * and the file's size. '~' is not allowed in driver paths, so no file has that key; listings show
 * the unfinished file in its place (see s3.ts).
 */
import { DeleteObjectCommand, GetObjectCommand, HeadObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { StorageError } from '../driver.js';
import { isNotFound, NAME, toStorageError, type Bucket } from './client.js';

export interface Pending {
  /** the multipart upload holding parts 1..parts; undefined while the file fits in the tail */
  uploadId?: string;
  /** parts of the upload that hold the file's first bytes */
  parts: number;
  /** bytes in those parts */
  partBytes: number;
  /** the bytes after them */
  tail: Buffer;
}

const SUFFIX = '~pending';
// user metadata (x-amz-meta-*); stores answer the names in lower case
const UPLOAD_ID = 'berth-upload-id';
const PARTS = 'berth-parts';
const SIZE = 'berth-size';

export class PendingStore {
  constructor(private readonly bucket: Bucket) {}

  private key(path: string): string {
    return this.bucket.key(path) + SUFFIX;
  }

  /** the pending state of `path`, undefined when it has none */
  async read(path: string): Promise<Pending | undefined> {
    let out;
    try {
      out = await this.bucket.client.send(new GetObjectCommand({ Bucket: this.bucket.name, Key: this.key(path) }));
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw toStorageError(err, `GetObject ${path}${SUFFIX}`);
    }
    const tail = Buffer.from(await out.Body!.transformToByteArray());
    const meta = out.Metadata ?? {};
    const parts = Number(meta[PARTS]);
    const size = Number(meta[SIZE]);
    if (!Number.isSafeInteger(parts) || !Number.isSafeInteger(size) || size < tail.length) {
      throw new StorageError(`${NAME}: ${path}${SUFFIX}: unreadable state of an unfinished write (metadata ${JSON.stringify(meta)})`, NAME);
    }
    return { uploadId: meta[UPLOAD_ID] || undefined, parts, partBytes: size - tail.length, tail };
  }

  /** the size and upload of the unfinished file at `path` (without its tail), undefined when there is none */
  async head(path: string): Promise<{ size: number; uploadId?: string } | undefined> {
    try {
      const out = await this.bucket.client.send(new HeadObjectCommand({ Bucket: this.bucket.name, Key: this.key(path) }));
      return { size: Number(out.Metadata?.[SIZE] ?? 0), uploadId: out.Metadata?.[UPLOAD_ID] || undefined };
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw toStorageError(err, `HeadObject ${path}${SUFFIX}`);
    }
  }

  async write(path: string, state: Pending): Promise<void> {
    const metadata = { [UPLOAD_ID]: state.uploadId ?? '', [PARTS]: String(state.parts), [SIZE]: String(state.partBytes + state.tail.length) };
    await this.bucket.send(`PutObject ${path}${SUFFIX}`, () =>
      this.bucket.client.send(
        new PutObjectCommand({ Bucket: this.bucket.name, Key: this.key(path), Body: state.tail, ContentLength: state.tail.length, Metadata: metadata, ...this.bucket.writeParams }),
      ),
    );
  }

  async delete(path: string): Promise<void> {
    await this.bucket.send(`DeleteObject ${path}${SUFFIX}`, () => this.bucket.client.send(new DeleteObjectCommand({ Bucket: this.bucket.name, Key: this.key(path) })));
  }
}

const PATH_NAME = /^[A-Za-z0-9._-]+$/;

/** the name of the file whose pending state a listed name is, if it is one */
export function pendingPathName(listed: string): string | undefined {
  return listed.endsWith(SUFFIX) ? listed.slice(0, -SUFFIX.length) : undefined;
}

/** whether a listed name can be a driver path's name (pending states and foreign keys cannot) */
export function isPathName(name: string): boolean {
  return PATH_NAME.test(name);
}
