/**
 * The multipart-upload operations on one bucket: create, parts (uploaded or copied), listing the
 * parts of an upload, completion, the multipart copy of large objects, and the abort of uploads.
 * The writer that keeps an upload open across requests is writer.ts.
 */
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  ListMultipartUploadsCommand,
  ListPartsCommand,
  UploadPartCommand,
  UploadPartCopyCommand,
  type CompletedPart,
} from '@aws-sdk/client-s3';
import { StorageError } from '../driver.js';
import type { Bucket } from './bucket.js';
import { isNotFound, NAME, toStorageError } from './client.js';

const MiB = 1024 * 1024;
const GiB = 1024 * MiB;
/** the smallest part S3 accepts, except for the last part of an upload */
export const MIN_PART_SIZE = 5 * MiB;
/** the largest part (and the largest single CopyObject) */
export const MAX_PART_SIZE = 5 * GiB;
/** S3's limit of parts in one multipart upload */
export const MAX_PARTS = 10_000;
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

  /**
   * the parts `numbers` (ascending) of an upload, as CompleteMultipartUpload wants them; the upload
   * gone or a part missing is a StorageError (other parts are left-overs of a request that never
   * finished, or lost to another writer, and are not used)
   */
  async listParts(key: string, path: string, uploadId: string, numbers: number[]): Promise<CompletedPart[]> {
    const found = await this.parts(key, path, uploadId, numbers.at(-1) ?? 0);
    return numbers.map((n) => {
      const part = found.get(n);
      if (part === undefined) throw new StorageError(`${NAME}: ListParts ${path}: part ${n} of upload ${uploadId} is missing`, NAME);
      return part;
    });
  }

  /** the parts of an upload up to number `last` (every part without it), by number */
  async parts(key: string, path: string, uploadId: string, last = Number.MAX_SAFE_INTEGER): Promise<Map<number, CompletedPart>> {
    const found = new Map<number, CompletedPart>();
    let marker: string | undefined;
    do {
      const out = await this.bucket.send(`ListParts ${path}`, () =>
        this.client.send(new ListPartsCommand({ Bucket: this.bucket.name, Key: key, UploadId: uploadId, MaxParts: LIST_PAGE, PartNumberMarker: marker })),
      );
      for (const p of out.Parts ?? []) if (p.PartNumber! <= last) found.set(p.PartNumber!, { PartNumber: p.PartNumber, ETag: p.ETag });
      marker = out.IsTruncated && Number(out.NextPartNumberMarker) < last ? out.NextPartNumberMarker : undefined;
    } while (marker !== undefined);
    return found;
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
