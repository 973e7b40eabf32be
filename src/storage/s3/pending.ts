/**
 * The state of a file whose writer was closed but not committed, so that any instance (or this
 * one after a restart) continues it: a small object next to the file's key, `<key>~pending`,
 * whose body is a random nonce and the tail (the bytes not yet in a part, under the 5 MiB minimum
 * part size) and whose metadata names the open multipart upload, which of its parts hold the
 * file's start, the first part number no writer has claimed, and the file's size. Every write is
 * conditional on the ETag the writer last saw (the nonce gives each write its own), which is how
 * concurrent writers on two instances find out about each other (writer.ts). '~' is not allowed in driver paths, so no file has that key; listings show
 * the unfinished file in its place (see driver.ts).
 */
import { createHash, randomBytes } from 'node:crypto';
import { DeleteObjectCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { StorageError, WriteConflictError } from '../driver.js';
import { failure, type Bucket, type SignedResponse } from './bucket.js';
import { httpStatus, NAME, toStorageError } from './client.js';

export interface Pending {
  /** the multipart upload holding the parts; undefined while the file fits in the tail */
  uploadId?: string;
  /** numbers of the upload's parts that hold the file's first bytes, ascending */
  parts: number[];
  /**
   * the first part number no writer has reserved: a writer claims numbers from here before it
   * sends parts (see writer.ts), so two writers of one file never send the same part number
   */
  nextPart: number;
  /** bytes in those parts */
  partBytes: number;
  /** the bytes after them */
  tail: Buffer;
  /** the state object's ETag as read or last written (conditional writes); undefined when there is none */
  etag?: string;
}

const SUFFIX = '~pending';
// user metadata (x-amz-meta-*); stores answer the names in lower case
const UPLOAD_ID = 'berth-upload-id';
/** the part numbers, as ranges: "1-5,8,10-12" */
const PART_LIST = 'berth-part-list';
/**
 * what states written before part lists had: a count N (parts 1-N), and no nonce. Read, never
 * written: a berth of that version finds no count in a new state and refuses it as unreadable
 * rather than taking the nonce for the file's bytes (a rolling upgrade with uploads open).
 */
const PART_COUNT = 'berth-parts';
const NEXT_PART = 'berth-next-part';
const SIZE = 'berth-size';
/** bytes before the tail in the body: a random nonce, so every write has an ETag of its own */
const HEAD = 'berth-head';
const NONCE_BYTES = 16;

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
    const body = Buffer.from(await res.body.arrayBuffer());
    const head = Number(meta(res, HEAD) ?? 0);
    const count = meta(res, PART_COUNT);
    const parts = count === undefined ? parseParts(meta(res, PART_LIST) ?? '') : /^\d+$/.test(count) ? Array.from({ length: Number(count) }, (_, i) => i + 1) : undefined;
    const size = Number(meta(res, SIZE));
    const tail = body.subarray(head);
    if (parts === undefined || !Number.isSafeInteger(size) || !Number.isSafeInteger(head) || head > body.length || size < tail.length) {
      throw new StorageError(`${NAME}: ${path}${SUFFIX}: unreadable state of an unfinished write (metadata ${PART_LIST}=${meta(res, PART_LIST)} ${PART_COUNT}=${count} ${SIZE}=${meta(res, SIZE)} ${HEAD}=${meta(res, HEAD)})`, NAME);
    }
    const nextPart = Number(meta(res, NEXT_PART) ?? (parts.at(-1) ?? 0) + 1);
    return { uploadId: meta(res, UPLOAD_ID) || undefined, parts, nextPart, partBytes: size - tail.length, tail, etag: etagOf(res.headers.etag) };
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

  /**
   * Writes the state if the state object is still the one `expected` names (its ETag; undefined:
   * there must be none), and returns the new ETag. Otherwise another writer changed it since:
   * WriteConflictError, nothing written.
   */
  async write(path: string, state: Pending, expected: string | undefined): Promise<string> {
    const metadata = {
      [UPLOAD_ID]: state.uploadId ?? '',
      [PART_LIST]: formatParts(state.parts),
      [NEXT_PART]: String(state.nextPart),
      [SIZE]: String(state.partBytes + state.tail.length),
      [HEAD]: String(NONCE_BYTES),
    };
    const body = Buffer.concat([randomBytes(NONCE_BYTES), state.tail]);
    // stores compare the bare ETag (Ceph answers 412 to a quoted one)
    const condition = expected === undefined ? { IfNoneMatch: '*' } : { IfMatch: expected };
    try {
      const out = await this.bucket.client.send(
        new PutObjectCommand({ Bucket: this.bucket.name, Key: this.key(path), Body: body, ContentLength: body.length, Metadata: metadata, ...condition, ...this.bucket.writeParams }),
      );
      return etagOf(out.ETag) ?? createHash('md5').update(body).digest('hex');
    } catch (err) {
      if (httpStatus(err) === 412) throw new WriteConflictError(`${NAME}: ${path}: another request changed this unfinished file meanwhile (on another instance) and was kept; this request's bytes were not`, NAME);
      throw toStorageError(err, `PutObject ${path}${SUFFIX}`);
    }
  }

  async delete(path: string): Promise<void> {
    await this.bucket.send(`DeleteObject ${path}${SUFFIX}`, () => this.bucket.client.send(new DeleteObjectCommand({ Bucket: this.bucket.name, Key: this.key(path) })));
  }
}

/** an ETag without its quotes */
function etagOf(value: string | string[] | undefined): string | undefined {
  return typeof value === 'string' && value !== '' ? value.replace(/^"|"$/g, '') : undefined;
}

/** part numbers (ascending) as ranges */
function formatParts(parts: number[]): string {
  const ranges: string[] = [];
  for (let i = 0; i < parts.length; ) {
    let j = i;
    while (j + 1 < parts.length && parts[j + 1] === parts[j] + 1) j++;
    ranges.push(i === j ? String(parts[i]) : `${parts[i]}-${parts[j]}`);
    i = j + 1;
  }
  return ranges.join(',');
}

/** ranges as part numbers; undefined when unreadable */
function parseParts(text: string): number[] | undefined {
  if (text === '') return [];
  const parts: number[] = [];
  for (const range of text.split(',')) {
    const m = /^(\d+)(?:-(\d+))?$/.exec(range);
    if (!m) return undefined;
    const [from, to] = [Number(m[1]), Number(m[2] ?? m[1])];
    if (from < 1 || to < from || from <= (parts.at(-1) ?? 0)) return undefined;
    for (let n = from; n <= to; n++) parts.push(n);
  }
  return parts;
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
