/**
 * The S3 writer. One multipart upload stays open from the first part to commit(), across
 * writers: close() uploads the buffered bytes as a part when they reach the 5 MiB minimum and
 * records the rest, with the upload's id and part count, in the file's pending state
 * (pending.ts); the next writer, on any instance, starts from that state. commit() sends the last
 * part and completes the upload (or, for a file that never reached a part, sends one PutObject).
 * So each byte crosses the network to the store once, whatever the number of requests.
 * See docs/decisions.md, "S3 storage driver".
 */
import type { CompletedPart } from '@aws-sdk/client-s3';
import { chunksOf, UnsupportedMethodError, type FileWriter } from '../driver.js';
import { NAME, type Bucket } from './client.js';
import { MAX_PART_SIZE, MIN_PART_SIZE, type Multipart } from './multipart.js';
import type { Pending, PendingStore } from './pending.js';

export interface WriterContext {
  bucket: Bucket;
  multipart: Multipart;
  pending: PendingStore;
  chunkSize: number;
}

/** where the file stood when the writer opened */
type Origin =
  /** nothing (or truncated): close() records even an empty file */
  | 'new'
  /** a pending state: close() records a new one if anything changed, commit() removes it */
  | 'pending'
  /** a complete object: it becomes the start of the upload (see openWriter) */
  | 'object';

const EMPTY: Pending = { parts: 0, partBytes: 0, tail: Buffer.alloc(0) };

/**
 * Opens a writer for `path`. Appending continues the pending state, or a complete object: one
 * under 5 MiB is read back into the buffer, a larger one becomes the first part(s) of a new upload
 * by UploadPartCopy. An object and a pending state at once means a commit stopped between its
 * completion and the removal of the state: the object is the file.
 */
export async function openWriter(ctx: WriterContext, path: string, append: boolean): Promise<FileWriter> {
  const key = ctx.bucket.key(path);
  if (!append) {
    await Promise.all([ctx.multipart.abortAll(key, (k) => k === key), ctx.pending.delete(path), ctx.bucket.deleteObject(path)]);
    return new S3Writer(ctx, path, 'new', EMPTY, 0);
  }
  const [state, object] = await Promise.all([ctx.pending.read(path), ctx.bucket.head(path)]);
  if (object === undefined) return new S3Writer(ctx, path, state ? 'pending' : 'new', state ?? EMPTY, 0);
  if (state) await discardPending(ctx, path, state);
  if (object.size >= MIN_PART_SIZE) return new S3Writer(ctx, path, 'object', EMPTY, object.size);
  const tail = object.size > 0 ? await ctx.bucket.getObject(path) : Buffer.alloc(0);
  return new S3Writer(ctx, path, 'object', { ...EMPTY, tail }, 0);
}

async function discardPending(ctx: WriterContext, path: string, state: Pending): Promise<void> {
  if (state.uploadId !== undefined) await ctx.multipart.abort(ctx.bucket.key(path), state.uploadId);
  await ctx.pending.delete(path);
}

/**
 * One part is uploaded while the next one fills: write() hands a full part to the store and
 * returns, and waits only when the part before is still in flight. Memory: at most two parts
 * (`chunksize` each) plus one incoming chunk.
 */
class S3Writer implements FileWriter {
  private readonly key: string;
  private finished = false;
  /** the multipart upload: the pending state's, or created (and a base object copied in) on first need */
  private upload: Promise<string> | undefined;
  private createdUpload = false;
  /** a pending state names the upload now */
  private recorded = false;
  /** parts whose ETags this writer knows, by part number - 1; the pending state's first `resumedParts` are listed at commit */
  private readonly parts: CompletedPart[] = [];
  private readonly resumedParts: number;
  private buffer: Buffer[];
  private buffered: number;
  private nextPart: number;
  /** the part upload in flight, if any; its failure is kept in `failure` */
  private inflight: Promise<void> | undefined;
  private failure: unknown;
  /** something was written since open */
  private dirty = false;
  private total: number;

  /** `baseObject`: bytes of the complete object at the path that become the upload's first parts (5 MiB or more) */
  constructor(
    private readonly ctx: WriterContext,
    private readonly path: string,
    private readonly origin: Origin,
    state: Pending,
    private readonly baseObject: number,
  ) {
    this.key = ctx.bucket.key(path);
    if (state.uploadId !== undefined) this.upload = Promise.resolve(state.uploadId);
    this.resumedParts = state.parts;
    const baseParts = Math.ceil(baseObject / MAX_PART_SIZE);
    this.nextPart = state.parts + baseParts + 1;
    this.buffer = state.tail.length > 0 ? [state.tail] : [];
    this.buffered = state.tail.length;
    this.total = state.partBytes + state.tail.length + baseObject;
  }

  get size(): number {
    return this.total;
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
    while (this.buffered >= this.ctx.chunkSize) await this.startPart(this.ctx.chunkSize);
    this.throwFailure();
  }

  /**
   * sends the first `bytes` buffered bytes as the next part once the part in flight is done, or
   * `alongside` it: the last bytes of a request (close, commit) go out next to the part before
   * instead of after it, with nothing more to buffer meanwhile
   */
  private async startPart(bytes: number, alongside = false): Promise<void> {
    const part = this.takePart(bytes);
    if (!alongside) await this.settle(); // at most one part in flight while bytes arrive
    const sending = this.sendPart(part).catch((err: unknown) => {
      this.failure ??= err;
    });
    const before = this.inflight;
    this.inflight = before ? Promise.all([before, sending]).then(() => undefined) : sending;
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

  /** the upload, created on first need; a base object becomes its first parts, copied server-side */
  private ensureUpload(): Promise<string> {
    this.upload ??= (async () => {
      const uploadId = await this.ctx.multipart.create(this.key, this.path);
      this.createdUpload = true;
      const count = Math.ceil(this.baseObject / MAX_PART_SIZE);
      const partSize = Math.ceil(this.baseObject / Math.max(1, count));
      for (let i = 0; i < count; i++) {
        const start = i * partSize;
        const end = Math.min(this.baseObject, start + partSize) - 1;
        this.parts[i] = await this.ctx.multipart.copyPart(this.key, uploadId, i + 1, this.path, start, end);
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
    this.parts[partNumber - 1] = await this.ctx.multipart.uploadPart(this.key, this.path, uploadId, partNumber, body);
  }

  /** the tail as one buffer */
  private tail(): Buffer {
    return this.buffer.length === 1 ? this.buffer[0] : Buffer.concat(this.buffer, this.buffered);
  }

  /**
   * Records what was written as the pending state: buffered bytes of at least the minimum part
   * size go out as a part first, so the state's tail stays small.
   */
  private async persist(): Promise<void> {
    const unchanged = !this.dirty && this.origin !== 'new';
    if (unchanged) return;
    if (this.buffered >= MIN_PART_SIZE) await this.startPart(this.buffered, true);
    await this.settle();
    if (this.baseObject > 0) await this.ensureUpload(); // the copy parts of an untouched large base
    const uploadId = await this.upload;
    const parts = this.nextPart - 1;
    await this.ctx.pending.write(this.path, { uploadId, parts, partBytes: this.total - this.buffered, tail: this.tail() });
    this.recorded = true;
    if (this.origin === 'object') await this.ctx.bucket.deleteObject(this.path);
  }

  /** makes everything written the object at the path */
  private async finish(): Promise<void> {
    if (this.origin === 'object' && !this.dirty) return; // the complete object, untouched
    // (a part in flight means the upload exists)
    if (this.upload === undefined && this.baseObject === 0) {
      await this.ctx.bucket.putObject(this.path, this.tail()); // never reached a part: one PutObject
    } else {
      if (this.buffered > 0) await this.startPart(this.buffered, true); // the last part may be small
      const uploadId = await this.ensureUpload();
      // the ETags of the parts earlier writers sent, listed while the last parts go out
      const [resumed] = await Promise.all([
        this.resumedParts > 0 ? this.ctx.multipart.listParts(this.key, this.path, uploadId, this.resumedParts) : [],
        this.settle(),
      ]);
      await this.ctx.multipart.complete(this.key, this.path, uploadId, [...resumed, ...this.parts.slice(this.resumedParts)]);
    }
    if (this.origin === 'pending') await this.ctx.pending.delete(this.path);
  }

  async close(): Promise<void> {
    await this.end(() => this.persist());
  }

  async commit(): Promise<void> {
    await this.end(() => this.finish());
  }

  /**
   * runs close's or commit's work once; on failure an upload this writer created (which no
   * pending state names yet) is aborted, one that a state names is kept with its parts
   */
  private async end(work: () => Promise<void>): Promise<void> {
    this.check();
    this.finished = true;
    try {
      await work();
    } catch (err) {
      if (this.createdUpload && !this.recorded) await this.abortUpload().catch(() => undefined);
      throw err;
    } finally {
      this.buffer = [];
      this.buffered = 0;
    }
  }

  private async abortUpload(): Promise<void> {
    await this.inflight;
    const uploadId = await this.upload?.catch(() => undefined);
    if (uploadId !== undefined) await this.ctx.multipart.abort(this.key, uploadId);
  }

  async cancel(): Promise<void> {
    this.check();
    this.finished = true;
    this.buffer = [];
    this.buffered = 0;
    await this.abortUpload();
    if (this.origin === 'pending') await this.ctx.pending.delete(this.path);
    await this.ctx.bucket.deleteObject(this.path);
  }

  private check(): void {
    if (this.finished) throw new UnsupportedMethodError(`${NAME}: writer for ${this.path} already closed`, NAME);
  }
}
