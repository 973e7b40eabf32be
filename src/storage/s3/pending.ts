/**
 * The state of a file whose writer was closed but not committed, so that any instance (or this
 * one after a restart) continues it: a small object next to the file's key, `<key>~pending`,
 * whose body is the tail (the bytes not yet in a part, under the 5 MiB minimum part size) and
 * whose metadata names the open multipart upload, how many of its parts hold the file's start,
 * and the file's size. '~' is not allowed in driver paths, so no file has that key; listings show
 * the unfinished file in its place (see s3.ts).
 */
import { DeleteObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { StorageError } from '../driver.js';
import { failure, NAME, type Bucket } from './client.js';
import type { SignedResponse } from './signed-http.js';

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
    const what = `GetObject ${path}${SUFFIX}`;
    const res = await this.bucket.http.send(what, 'GET', this.key(path));
    if (res.status !== 200) {
      const body = await res.body.text();
      if (res.status === 404) return undefined;
      throw failure(res, what, body);
    }
    const tail = Buffer.from(await res.body.arrayBuffer());
    const parts = Number(meta(res, PARTS));
    const size = Number(meta(res, SIZE));
    if (!Number.isSafeInteger(parts) || !Number.isSafeInteger(size) || size < tail.length) {
      throw new StorageError(`${NAME}: ${path}${SUFFIX}: unreadable state of an unfinished write (metadata ${PARTS}=${meta(res, PARTS)} ${SIZE}=${meta(res, SIZE)})`, NAME);
    }
    return { uploadId: meta(res, UPLOAD_ID) || undefined, parts, partBytes: size - tail.length, tail };
  }

  /** the size and upload of the unfinished file at `path` (without its tail), undefined when there is none */
  async head(path: string): Promise<{ size: number; uploadId?: string } | undefined> {
    const what = `HeadObject ${path}${SUFFIX}`;
    const res = await this.bucket.http.send(what, 'HEAD', this.key(path));
    await res.body.dump();
    if (res.status === 404) return undefined;
    if (res.status !== 200) throw failure(res, what, '');
    return { size: Number(meta(res, SIZE) ?? 0), uploadId: meta(res, UPLOAD_ID) || undefined };
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

/** a user metadata value of an answer */
function meta(res: SignedResponse, name: string): string | undefined {
  const value = res.headers[`x-amz-meta-${name}`];
  return typeof value === 'string' ? value : undefined;
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
