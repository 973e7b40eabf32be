/**
 * Multipart uploads: the writer (bytes buffered up to `chunksize` and sent as parts; an appending
 * writer continues an existing object server-side, see docs/decisions.md, "S3 driver"), the
 * multipart copy of large objects, and the clean-up of uploads nobody finished.
 */
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  ListMultipartUploadsCommand,
  UploadPartCommand,
  UploadPartCopyCommand,
  type CompletedPart,
} from '@aws-sdk/client-s3';
import { chunksOf, UnsupportedMethodError, type FileWriter } from '../driver.js';
import { isNotFound, NAME, toStorageError, type Bucket } from './client.js';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;
/** the smallest part S3 accepts, except for the last part of an upload */
export const MIN_PART_SIZE = 5 * MiB;
/** the largest part (and the largest single CopyObject) */
const MAX_PART_SIZE = 5 * GiB;
export const LIST_PAGE = 1000;

/** the multipart-upload operations on one bucket */
export class Multipart {
  constructor(private readonly bucket: Bucket) {}

  private get client() {
    return this.bucket.client;
  }

  async create(key: string, path: string): Promise<string> {
    const out = await this.bucket.send(`CreateMultipartUpload ${path}`, () =>
      this.client.send(new CreateMultipartUploadCommand({ Bucket: this.bucket.name, Key: key, ContentType: 'application/octet-stream', ...this.bucket.writeParams })),
    );
    return out.UploadId!;
  }

  async uploadPart(key: string, path: string, uploadId: string, partNumber: number, body: Buffer): Promise<CompletedPart> {
    const out = await this.bucket.send(`UploadPart ${path} #${partNumber}`, () =>
      this.client.send(new UploadPartCommand({ Bucket: this.bucket.name, Key: key, UploadId: uploadId, PartNumber: partNumber, Body: body, ContentLength: body.length })),
    );
    return { PartNumber: partNumber, ETag: out.ETag };
  }

  async copyPart(key: string, uploadId: string, partNumber: number, src: string, start: number, end: number): Promise<CompletedPart> {
    const out = await this.bucket.send(`UploadPartCopy ${src} -> #${partNumber}`, () =>
      this.client.send(
        new UploadPartCopyCommand({
          Bucket: this.bucket.name,
          Key: key,
          UploadId: uploadId,
          PartNumber: partNumber,
          CopySource: this.bucket.copySource(src),
          CopySourceRange: `bytes=${start}-${end}`,
        }),
      ),
    );
    return { PartNumber: partNumber, ETag: out.CopyPartResult?.ETag };
  }

  /** completes an upload (its answer's ETag is not used: some stores send an empty one) */
  async complete(key: string, path: string, uploadId: string, parts: CompletedPart[]): Promise<void> {
    await this.bucket.send(`CompleteMultipartUpload ${path}`, () =>
      this.client.send(new CompleteMultipartUploadCommand({ Bucket: this.bucket.name, Key: key, UploadId: uploadId, MultipartUpload: { Parts: parts } })),
    );
  }

  async abort(key: string, uploadId: string): Promise<void> {
    try {
      await this.client.send(new AbortMultipartUploadCommand({ Bucket: this.bucket.name, Key: key, UploadId: uploadId }));
    } catch (err) {
      if (!isNotFound(err)) throw toStorageError(err, `AbortMultipartUpload ${key}`);
    }
  }

  /** aborts the in-progress multipart uploads whose key starts with `prefix` and passes `match` */
  async abortAll(prefix: string, match: (key: string) => boolean): Promise<number> {
    let aborted = 0;
    let keyMarker: string | undefined;
    let uploadIdMarker: string | undefined;
    do {
      const out = await this.bucket.send(`ListMultipartUploads ${prefix}`, () =>
        this.client.send(
          new ListMultipartUploadsCommand({ Bucket: this.bucket.name, Prefix: prefix, MaxUploads: LIST_PAGE, KeyMarker: keyMarker, UploadIdMarker: uploadIdMarker }),
        ),
      );
      for (const u of out.Uploads ?? []) {
        if (u.Key !== undefined && u.UploadId !== undefined && match(u.Key)) {
          await this.abort(u.Key, u.UploadId);
          aborted++;
        }
      }
      [keyMarker, uploadIdMarker] = out.IsTruncated ? [out.NextKeyMarker, out.NextUploadIdMarker] : [undefined, undefined];
    } while (keyMarker !== undefined);
    return aborted;
  }

  /** copies src (`size` bytes) to dst in parts of `chunk` bytes, at most `concurrency` in flight */
  async copy(src: string, dst: string, size: number, chunk: number, concurrency: number): Promise<void> {
    const dstKey = this.bucket.key(dst);
    const uploadId = await this.create(dstKey, dst);
    try {
      const count = Math.ceil(size / chunk);
      const parts: CompletedPart[] = new Array(count);
      let next = 0;
      const worker = async () => {
        while (next < count) {
          const i = next++;
          const start = i * chunk;
          const end = Math.min(size, start + chunk) - 1;
          parts[i] = await this.copyPart(dstKey, uploadId, i + 1, src, start, end);
        }
      };
      await Promise.all(Array.from({ length: Math.min(count, concurrency) }, worker));
      await this.complete(dstKey, dst, uploadId, parts);
    } catch (err) {
      await this.abort(dstKey, uploadId).catch(() => undefined);
      throw err;
    }
  }
}

/**
 * Opens a writer for `path`. Between writers (close(), another request, another instance) the
 * file is always a plain, readable object: close() completes the multipart upload. An appending
 * writer continues it server-side: an object of at least 5 MiB becomes the first part(s) of a new
 * multipart upload by UploadPartCopy; a smaller one is read back into the buffer. So no process
 * memory is needed to resume, and any instance can continue.
 */
export async function openWriter(bucket: Bucket, multipart: Multipart, path: string, append: boolean, chunkSize: number): Promise<FileWriter> {
  const key = bucket.key(path);
  // multipart uploads left by a writer that never finished (a crash): the object is what counts
  await multipart.abortAll(key, (k) => k === key);
  let base: { size: number } | undefined;
  if (append) {
    base = await bucket.head(path);
  } else {
    await bucket.deleteObject(path);
  }
  const writer = new S3Writer(bucket, multipart, path, key, base?.size ?? 0, chunkSize);
  if (base !== undefined && base.size > 0 && base.size < MIN_PART_SIZE) await writer.loadSmallBase();
  return writer;
}

/**
 * One part is uploaded while the next one fills: write() hands a full part to the store and
 * returns, and waits only when the part before is still in flight. Memory: at most two parts
 * (`chunksize` each) plus one incoming chunk.
 */
class S3Writer implements FileWriter {
  private finished = false;
  /** the multipart upload, created (and the base copied into it) on first need */
  private upload: Promise<string> | undefined;
  private readonly parts: CompletedPart[] = [];
  private buffer: Buffer[] = [];
  private buffered = 0;
  /** bytes of the existing object that become the first parts, copied server-side (base of at least 5 MiB) */
  private readonly baseSize: number;
  private readonly baseParts: number;
  private nextPart: number;
  /** the part upload in flight, if any; its failure is kept in `failure` */
  private inflight: Promise<void> | undefined;
  private failure: unknown;
  /** something changed since open: close() has to write */
  private dirty = false;
  private total: number;

  constructor(
    private readonly bucket: Bucket,
    private readonly multipart: Multipart,
    private readonly path: string,
    private readonly key: string,
    baseSize: number,
    private readonly chunkSize: number,
  ) {
    this.total = baseSize;
    this.baseSize = baseSize >= MIN_PART_SIZE ? baseSize : 0;
    this.baseParts = Math.ceil(this.baseSize / MAX_PART_SIZE);
    this.nextPart = this.baseParts + 1;
  }

  get size(): number {
    return this.total;
  }

  /** a base object below the minimum part size is read back and sent again with the new bytes */
  async loadSmallBase(): Promise<void> {
    const data = await this.bucket.getObject(this.path);
    this.buffer = [data];
    this.buffered = data.length;
    this.total = data.length;
  }

  async write(data: Buffer | readonly Buffer[]): Promise<void> {
    this.check();
    for (const chunk of chunksOf(data)) {
      if (chunk.length === 0) continue;
      this.buffer.push(Buffer.from(chunk)); // a copy: the caller may reuse its buffer once this resolves
      this.buffered += chunk.length;
      this.total += chunk.length;
      this.dirty = true;
    }
    while (this.buffered >= this.chunkSize) {
      const part = this.takePart(this.chunkSize);
      await this.settle(); // at most one part in flight
      this.inflight = this.sendPart(part).catch((err: unknown) => {
        this.failure ??= err;
      });
    }
    this.throwFailure();
  }

  /** waits for the part in flight */
  private async settle(): Promise<void> {
    if (this.inflight) await this.inflight;
    this.inflight = undefined;
    this.throwFailure();
  }

  private throwFailure(): void {
    if (this.failure !== undefined) throw this.failure;
  }

  /** starts the multipart upload; the existing object (>= 5 MiB) becomes its first parts, copied server-side */
  private ensureUpload(): Promise<string> {
    this.upload ??= (async () => {
      const uploadId = await this.multipart.create(this.key, this.path);
      const partSize = Math.ceil(this.baseSize / Math.max(1, this.baseParts));
      for (let i = 0; i < this.baseParts; i++) {
        const start = i * partSize;
        const end = Math.min(this.baseSize, start + partSize) - 1;
        this.parts[i] = await this.multipart.copyPart(this.key, uploadId, i + 1, this.path, start, end);
      }
      return uploadId;
    })();
    return this.upload;
  }

  /** the first `bytes` buffered bytes as the next part (numbered now, sent later) */
  private takePart(bytes: number): { partNumber: number; body: Buffer } {
    const all = this.buffer.length === 1 ? this.buffer[0] : Buffer.concat(this.buffer, this.buffered);
    const body = all.subarray(0, bytes);
    const rest = all.subarray(bytes);
    this.buffer = rest.length > 0 ? [Buffer.from(rest)] : [];
    this.buffered = rest.length;
    return { partNumber: this.nextPart++, body };
  }

  private async sendPart({ partNumber, body }: { partNumber: number; body: Buffer }): Promise<void> {
    const uploadId = await this.ensureUpload();
    this.parts[partNumber - 1] = await this.multipart.uploadPart(this.key, this.path, uploadId, partNumber, body);
  }

  /** makes everything written so far the object at the path */
  private async persist(): Promise<void> {
    const multipart = this.upload !== undefined || this.inflight !== undefined || (this.dirty && this.baseSize > 0);
    if (!multipart) {
      if (!this.dirty && this.total > 0) return; // an untouched base: nothing to do
      const body = this.buffer.length === 1 ? this.buffer[0] : Buffer.concat(this.buffer, this.buffered);
      await this.bucket.putObject(this.path, body); // small file (or empty): one PutObject
      return;
    }
    try {
      await this.settle();
      // the last part may be small; a large base with a few new bytes gets its copy parts here
      if (this.buffered > 0) await this.sendPart(this.takePart(this.buffered));
      const uploadId = await this.ensureUpload();
      await this.multipart.complete(this.key, this.path, uploadId, this.parts);
    } catch (err) {
      await this.abort();
      throw err;
    }
  }

  /** aborts the multipart upload, if one was started */
  private async abort(): Promise<void> {
    await this.inflight;
    const uploadId = await this.upload?.catch(() => undefined);
    if (uploadId !== undefined) await this.multipart.abort(this.key, uploadId).catch(() => undefined);
  }

  async close(): Promise<void> {
    this.check();
    this.finished = true;
    try {
      await this.persist();
    } finally {
      this.buffer = [];
      this.buffered = 0;
    }
  }

  async commit(): Promise<void> {
    return this.close();
  }

  async cancel(): Promise<void> {
    this.check();
    this.finished = true;
    this.buffer = [];
    this.buffered = 0;
    await this.inflight;
    const uploadId = await this.upload?.catch(() => undefined);
    if (uploadId !== undefined) await this.multipart.abort(this.key, uploadId);
    await this.bucket.deleteObject(this.path);
  }

  private check(): void {
    if (this.finished) throw new UnsupportedMethodError(`${NAME}: writer for ${this.path} already closed`, NAME);
  }
}
