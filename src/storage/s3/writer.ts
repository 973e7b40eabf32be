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
import { chunksOf, UnsupportedMethodError, WriteRefusedError, type FileWriter } from '../driver.js';
import type { Bucket } from './bucket.js';
import { NAME } from './client.js';
import { MAX_PART_SIZE, MIN_PART_SIZE, type Multipart } from './multipart.js';
import type { Pending, PendingStore } from './pending.js';

export interface WriterContext {
  bucket: Bucket;
  multipart: Multipart;
  pending: PendingStore;
  chunkSize: number;
  /** parts one upload may have (S3: MAX_PARTS; tests lower it) */
  maxParts: number;
}

/** where the file stood when the writer opened */
type Origin =
  /** nothing (or truncated): close() records even an empty file */
  | 'new'
  /** a pending state: close() records a new one if anything changed, commit() removes it */
  | 'pending'
  /** a complete object: it becomes the start of the upload (see openWriter) */
  | 'object';

const EMPTY: Pending = { parts: [], nextPart: 1, partBytes: 0, tail: Buffer.alloc(0) };

/** part numbers a writer's first claim reserves; each further claim of that writer reserves twice as many */
const FIRST_CLAIM = 4;

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
 * returns, and waits only when the part before is still in flight. Incoming bytes are copied once,
 * into a part buffer of `chunksize`; a buffer whose part is stored is reused for the next one. So
 * a writer holds two part buffers and makes no garbage per chunk (before, each chunk was copied,
 * then the chunks concatenated into the part: peak RSS of a 128 MiB push 171 MiB).
 */
class S3Writer implements FileWriter {
  private readonly key: string;
  private finished = false;
  /** the multipart upload: the pending state's, or created (and a base object copied in) on first need */
  private upload: Promise<string> | undefined;
  private createdUpload = false;
  /** a pending state names the upload now */
  private recorded = false;
  /** the parts this writer sent, by part number - 1; the pending state's `resumedParts` are listed at commit */
  private readonly parts: CompletedPart[] = [];
  private readonly resumedParts: number[];
  /**
   * Concurrent writers (two requests of one upload on two instances): before it sends a part, a
   * writer claims part numbers by rewriting the state it opened from (unchanged but for
   * `nextPart`) on condition that it is still the same object (its ETag); every later write of
   * the state is conditional on the writer's last one. So two writers never send the same part
   * number, and of two that overlap, the one that claimed later is kept: the other's claim or
   * close fails with WriteConflictError (the request answers 416) and its parts are never listed.
   */
  private etag: string | undefined;
  /** the state as opened: what a claim writes again */
  private readonly opened: Pending;
  /** part numbers up to this one are this writer's to send */
  private reservedUpTo: number;
  private claimSize = FIRST_CLAIM;
  /** claims are written one after the other */
  private claims: Promise<void> = Promise.resolve();
  /** the part filling: its first `buffered` bytes are the file's unsent end */
  private buffer: Buffer | undefined;
  private buffered: number;
  /** a part buffer whose upload is done, for the next part */
  private spare: Buffer | undefined;
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
    this.opened = state;
    this.etag = state.etag;
    this.reservedUpTo = state.nextPart - 1;
    const baseParts = Math.ceil(baseObject / MAX_PART_SIZE);
    this.nextPart = state.nextPart + baseParts;
    this.buffer = state.tail.length > 0 ? state.tail : undefined;
    this.buffered = state.tail.length;
    this.total = state.partBytes + state.tail.length + baseObject;
  }

  get size(): number {
    return this.total;
  }

  async write(data: Buffer | readonly Buffer[]): Promise<void> {
    this.check();
    const size = this.ctx.chunkSize;
    for (const chunk of chunksOf(data)) {
      // copied: the caller may reuse its buffer once this resolves
      for (let at = 0; at < chunk.length; ) {
        const buffer = this.partBuffer();
        const copied = chunk.copy(buffer, this.buffered, at, Math.min(chunk.length, at + size - this.buffered));
        at += copied;
        this.buffered += copied;
        this.total += copied;
        this.dirty = true;
        if (this.buffered === size) await this.startPart();
      }
    }
    this.throwFailure();
  }

  /** the buffer the next bytes go into: the part filling, or a spare or new one of `chunksize` */
  private partBuffer(): Buffer {
    if (this.buffer === undefined || this.buffer.length < this.ctx.chunkSize) {
      // a tail read from the pending state (under 5 MiB) moves into a whole part buffer
      const buffer = this.spare ?? Buffer.allocUnsafe(this.ctx.chunkSize);
      this.spare = undefined;
      this.buffer?.copy(buffer, 0, 0, this.buffered);
      this.buffer = buffer;
    }
    return this.buffer;
  }

  /**
   * sends the buffered bytes as the next part once the part in flight is done, or `alongside` it:
   * the last bytes of a request (close, commit) go out next to the part before instead of after
   * it, with nothing more to buffer meanwhile
   */
  private async startPart(alongside = false): Promise<void> {
    const part = this.takePart();
    if (!alongside) await this.settle(); // at most one part in flight while bytes arrive
    const sending = this.sendPart(part).then(
      () => {
        if (part.buffer.length === this.ctx.chunkSize) this.spare = part.buffer;
      },
      (err: unknown) => {
        this.failure ??= err;
      },
    );
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
      if (count > 0) await this.reserve(count, uploadId);
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

  /** the buffered bytes as the next part (numbered now, sent later) */
  private takePart(): { partNumber: number; body: Buffer; buffer: Buffer } {
    if (this.nextPart > this.ctx.maxParts) {
      // refused here, with a message, rather than by the store at completion
      throw new WriteRefusedError(
        `${NAME}: ${this.path}: the upload would need more than ${this.ctx.maxParts} parts, S3's limit for one object (${this.total} bytes so far). ` +
          `Each request's last part can be as small as 5 MiB: send larger chunks (at least storage.s3.chunksize, ${this.ctx.chunkSize} bytes), or push the blob in one request`,
        NAME,
      );
    }
    const buffer = this.buffer!;
    const body = buffer.subarray(0, this.buffered);
    this.buffer = undefined;
    this.buffered = 0;
    return { partNumber: this.nextPart++, body, buffer };
  }

  /** makes part numbers up to `partNumber` this writer's (a claim, unless they are already) */
  private reserve(partNumber: number, uploadId: string): Promise<void> {
    this.claims = this.claims.then(async () => {
      if (partNumber <= this.reservedUpTo) return;
      const upTo = Math.min(this.ctx.maxParts, partNumber + this.claimSize - 1);
      await this.claim(upTo, uploadId);
      this.claimSize *= 2;
    });
    return this.claims;
  }

  /** writes the state as opened, naming `uploadId` and with numbers up to `upTo` taken */
  private async claim(upTo: number, uploadId: string | undefined): Promise<void> {
    this.etag = await this.ctx.pending.write(this.path, { ...this.opened, uploadId, nextPart: upTo + 1 }, this.etag);
    this.reservedUpTo = upTo;
    // from here on the state names the upload: another writer may use it, so it is never aborted
    this.recorded = true;
  }

  private async sendPart({ partNumber, body }: { partNumber: number; body: Buffer }): Promise<void> {
    const uploadId = await this.ensureUpload();
    await this.reserve(partNumber, uploadId);
    this.parts[partNumber - 1] = await this.ctx.multipart.uploadPart(this.key, this.path, uploadId, partNumber, body);
  }

  /** the buffered bytes */
  private tail(): Buffer {
    return this.buffer === undefined ? Buffer.alloc(0) : this.buffer.subarray(0, this.buffered);
  }

  /**
   * Records what was written as the pending state: buffered bytes of at least the minimum part
   * size go out as a part first, so the state's tail stays small.
   */
  private async persist(): Promise<void> {
    const unchanged = !this.dirty && this.origin !== 'new';
    if (unchanged) return;
    if (this.buffered >= MIN_PART_SIZE) await this.startPart(true);
    await this.settle();
    if (this.baseObject > 0) await this.ensureUpload(); // the copy parts of an untouched large base
    const uploadId = await this.upload;
    const sent = this.sentParts().map((p) => p.PartNumber!);
    // numbers this writer reserved but did not use are free again: nobody claimed after it, or this write fails
    const nextPart = Math.max(this.opened.nextPart, (sent.at(-1) ?? 0) + 1);
    this.etag = await this.ctx.pending.write(this.path, { uploadId, parts: [...this.resumedParts, ...sent], nextPart, partBytes: this.total - this.buffered, tail: this.tail() }, this.etag);
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
      if (this.buffered > 0) await this.startPart(true); // the last part may be small
      const uploadId = await this.ensureUpload();
      // the ETags of the parts earlier writers sent, listed while the last parts go out
      const [resumed] = await Promise.all([
        this.resumedParts.length > 0 ? this.ctx.multipart.listParts(this.key, this.path, uploadId, this.resumedParts) : [],
        this.settle(),
        this.claims,
      ]);
      // still the state's writer? (a claim says so; a request that sent no part has made none yet)
      if (this.origin === 'pending' && this.etag === this.opened.etag) await this.reserve(this.reservedUpTo + 1, uploadId);
      await this.complete(uploadId, [...resumed, ...this.sentParts()]);
    }
    // the state read at open, or written by this writer's claims
    if (this.etag !== undefined) await this.ctx.pending.delete(this.path);
  }

  /**
   * CompleteMultipartUpload. Parts a losing concurrent writer sent lie between the file's parts;
   * S3 skips parts the list leaves out, Ceph radosgw (16.2 at least) refuses with InvalidPart: that
   * upload cannot be completed, and the client is told to push again.
   */
  private async complete(uploadId: string, parts: CompletedPart[]): Promise<void> {
    try {
      await this.ctx.multipart.complete(this.key, this.path, uploadId, parts);
    } catch (err) {
      const listed = new Set(parts.map((p) => p.PartNumber));
      const strays = [...(await this.ctx.multipart.parts(this.key, this.path, uploadId, parts.at(-1)?.PartNumber)).keys()].filter((n) => !listed.has(n));
      if (strays.length === 0) throw err;
      throw new WriteRefusedError(
        `${NAME}: ${this.path}: the store refuses to complete the upload around ${strays.length} part(s) a concurrent request (on another instance) sent and lost (${(err as Error).message}); nothing was stored: push the blob again`,
        NAME,
      );
    }
  }

  /** the parts this writer sent, ascending */
  private sentParts(): CompletedPart[] {
    return this.parts.filter((p) => p !== undefined);
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
      this.buffer = this.spare = undefined;
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
    this.buffer = this.spare = undefined;
    this.buffered = 0;
    await this.abortUpload();
    if (this.etag !== undefined) await this.ctx.pending.delete(this.path);
    await this.ctx.bucket.deleteObject(this.path);
  }

  private check(): void {
    if (this.finished) throw new UnsupportedMethodError(`${NAME}: writer for ${this.path} already closed`, NAME);
  }
}
