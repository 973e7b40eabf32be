/**
 * Upload sessions: bytes are appended to repositories/<name>/_uploads/<uuid>/data and hashed as
 * they arrive. On completion the digest is checked and the data moved to blobs/ (atomically), so a
 * blob is visible only once verified. All state is in storage; the running hash (of the upload's
 * algorithm: sha256 unless the client named another when it started) is kept in memory only as a
 * shortcut. A chunk that lands where it is not (another instance, after a restart) is written
 * unhashed, and the digest is computed from the committed bytes on completion: a driver need not
 * make a file readable before commit (S3 keeps its multipart upload open until then).
 * The blob is stored under the algorithm of the first digest the completion names; a digest of
 * another algorithm than the running hash's is checked by reading the stored bytes again.
 * An upload older than the expiry age is gone: removed when next addressed (the purge removes the
 * ones nobody comes back to).
 */
import { randomUUID, type Hash } from 'node:crypto';
import { threadHash, type ThreadHash } from '../crypto/hash-thread.js';
import { shortLivedBytes } from '../storage/short-lived-bytes.js';
import { systemClock, type Clock } from '../scheduler/clock.js';
import { isStorageFull, PathNotFoundError, unlessMissing, WriteConflictError, WriteRefusedError, type FileWriter, type StorageDriver } from '../storage/driver.js';
import * as layout from './layout.js';
import { BlobStore, type BlobInfo } from './blobs.js';
import { digestAlgorithm, hasherDigest, newHasher, parseDigest, type Algorithm, type Digest } from './digest.js';
import { RegistryError } from './errors.js';
import { KeyedLock } from './keyed-lock.js';

export interface UploadStatus {
  name: string;
  uuid: string;
  /** bytes received and persisted so far */
  size: number;
  startedAt: Date;
  /** what the running hash computes (the `digest-algorithm` of the POST; sha256 by default) */
  algorithm: Algorithm;
}

/** A chunk that does not start where the upload ends (416); `size` is what the upload holds. */
export class UploadRangeError extends RegistryError {
  constructor(readonly size: number, message: string) {
    super('RANGE_INVALID', message, { detail: { size } });
  }
}

export interface ChunkRange {
  /** first byte offset the client says the chunk starts at */
  start: number;
  /** inclusive last offset the client says the chunk ends at */
  end: number;
}

/** running hashes of recently used uploads, keyed by uuid; valid only when `offset` equals the stored size */
interface HashState {
  hash: Hash;
  algorithm: Algorithm;
  offset: number;
}

/** the digest of an upload's first `offset` bytes, hashed on the hashing thread: it cannot be extended */
interface DigestState {
  digest: Digest;
  algorithm: Algorithm;
  offset: number;
}

/** how a whole blob from a fast source (the proxy's fetch) is taken: UploadSessions.complete */
export interface BulkBody {
  hashOffThread?: boolean;
  reusedBuffers?: boolean;
}

export interface UploadSessionsOptions {
  /**
   * milliseconds after its start when an upload expires (storage.maintenance.uploadpurging.age,
   * when purging is enabled and not a dry run); undefined: uploads never expire
   */
  maxAge?: number;
  /** "now", for start times and expiry (default: the system clock) */
  clock?: Clock;
}

const MAX_HASH_STATES = 10_000;
/**
 * 256 KiB: four storage calls per MiB instead of sixteen (one per socket chunk); 1 MiB batches
 * cost eight concurrent pushes about 20 MiB more of peak RSS (docs/decisions.md, "Uploads")
 */
const WRITE_BATCH_BYTES = 1 << 18;

export class UploadSessions {
  private readonly locks = new KeyedLock();
  private readonly hashes = new Map<string, HashState | DigestState>();
  private readonly maxAge: number | undefined;
  private readonly clock: Clock;

  constructor(
    private readonly driver: StorageDriver,
    private readonly blobs: BlobStore,
    options: UploadSessionsOptions = {},
  ) {
    this.maxAge = options.maxAge;
    this.clock = options.clock ?? systemClock;
  }

  /**
   * `algorithm`: what the running hash computes. The caller keeps it (in the upload URL's signed
   * state) and hands it back on every later call: storage holds no more than Distribution's files.
   */
  async start(name: string, algorithm: Algorithm = 'sha256'): Promise<UploadStatus> {
    const uuid = randomUUID();
    const startedAt = new Date(this.clock.now());
    await this.driver.putContent(layout.uploadStartedAt(name, uuid), Buffer.from(startedAt.toISOString()));
    return { name, uuid, size: 0, startedAt, algorithm };
  }

  /** the upload's progress, or 404 BLOB_UPLOAD_UNKNOWN (an expired upload is removed first) */
  async status(name: string, uuid: string, algorithm: Algorithm = 'sha256'): Promise<UploadStatus> {
    const status = await this.read(name, uuid, algorithm);
    if (!this.expired(status)) return status;
    // removed under the lock, so not in the middle of a chunk still being written
    return this.locks.run(uuid, () => this.open(name, uuid, algorithm));
  }

  /**
   * the upload's progress, or 404 BLOB_UPLOAD_UNKNOWN; removes it when expired (under the lock).
   * Without `withSize` the size is left at 0 for a writer to tell (one stat fewer per chunk).
   */
  private async open(name: string, uuid: string, algorithm: Algorithm, withSize = true): Promise<UploadStatus> {
    const status = await this.read(name, uuid, algorithm, withSize);
    if (this.expired(status)) {
      await this.remove(name, uuid);
      throw uploadUnknown(uuid);
    }
    return status;
  }

  private expired(status: UploadStatus): boolean {
    return this.maxAge !== undefined && this.clock.now() - status.startedAt.getTime() > this.maxAge;
  }

  private async read(name: string, uuid: string, algorithm: Algorithm, withSize = true): Promise<UploadStatus> {
    let startedAt: Date;
    try {
      startedAt = new Date((await this.driver.getContent(layout.uploadStartedAt(name, uuid))).toString().trim());
    } catch (err) {
      if (err instanceof PathNotFoundError) throw uploadUnknown(uuid);
      throw err;
    }
    return { name, uuid, size: withSize ? await this.storedSize(name, uuid) : 0, startedAt, algorithm };
  }

  /**
   * appends a chunk (PATCH); it must start where the upload ends: at `range.start` when given, else
   * at `offset` (the size the client last heard of) when given
   */
  append(name: string, uuid: string, body: AsyncIterable<Buffer> | Iterable<Buffer>, range?: ChunkRange, algorithm: Algorithm = 'sha256', offset?: number): Promise<UploadStatus> {
    return this.locks.run(uuid, async () => {
      const status = await this.open(name, uuid, algorithm, false);
      if (!range) {
        status.size = await this.write(status, body, false, offset);
        return status;
      }
      // the chunk must be the range it declares: what arrived of it is kept (as after a
      // disconnect), bytes beyond it are not, and the client resumes from the Range it is told
      const declared = range.end - range.start + 1;
      let overrun = false;
      try {
        status.size = await this.write(status, upTo(body, declared), false, range.start);
      } catch (err) {
        if (!(err instanceof ChunkOverrun)) throw err;
        overrun = true;
        status.size = await this.storedSize(name, uuid);
      }
      if (overrun || status.size !== range.end + 1) {
        const what = overrun ? 'more bytes than that arrived' : `${status.size - range.start} bytes arrived`;
        throw new UploadRangeError(status.size, `the chunk declared Content-Range ${range.start}-${range.end} (${declared} bytes) but ${what}; the upload holds ${status.size} bytes: continue from there`);
      }
      return status;
    });
  }

  /**
   * Completes the upload (PUT): appends the last bytes, if any, checks the content against every
   * given digest, links it into the repository and moves it to blobs/, under the first digest's
   * algorithm. On a mismatch the upload is discarded (the client starts over, as the spec's state
   * table says).
   *
   * The link comes before the move so that a completion cut short (SIGKILL) can be retried: killed
   * before the move, the data is still in the upload; killed after it, the upload is empty and the
   * repository already links the stored blob, which the retry then reports as done. (Linking a
   * stored blob the repository does not link, on an empty upload, would hand any blob to whoever
   * knows its digest; a retry never needs that.)
   * The last bytes must start where the upload ends: at `range.start` when given, else at `offset`
   * when given (as for `append`).
   *
   * `writeBatch`: the bytes gathered per storage write. A caller that fills one upload at a time
   * from a fast source (the proxy's blob fetch) passes more than the default: 1 MiB writes took
   * about 0.25 CPU s less per GiB than 256 KiB ones (docs/performance.md). `bulk`, for the proxy's
   * fetch: `hashOffThread`, a body of a batch or more is hashed on the hashing thread
   * (src/crypto/hash-thread.ts), which takes 0.55 CPU s per GiB off the main thread and costs
   * about 10 MiB of RSS while it runs (pushes do not ask: their peak RSS, docs/decisions.md
   * "Uploads"); `reusedBuffers`, the body's Buffers are its producer's, read into again, not
   * garbage: the collector is not paced for them (src/runtime/gc-pacing.ts).
   */
  complete(name: string, uuid: string, digests: string[], body?: AsyncIterable<Buffer>, range?: ChunkRange, algorithm: Algorithm = 'sha256', offset?: number, writeBatch = WRITE_BATCH_BYTES, bulk: BulkBody = {}): Promise<BlobInfo> {
    const expected = digests.map(parseDigest);
    return this.locks.run(uuid, async () => {
      const status = await this.open(name, uuid, algorithm, false);
      const size = await this.write(status, body ?? [], true, range ? range.start : offset, writeBatch, bulk);
      const done = size === 0 ? await this.completedBefore(name, expected) : undefined;
      if (done) {
        await this.blobs.indexLink(name, done.digest, done.size); // a completion cut short before the index was told
        await this.remove(name, uuid);
        return done;
      }
      const digest = await this.verify(status, size, expected);
      await this.blobs.linkBeforeStored(name, digest);
      await this.moveToBlobs(name, uuid, digest);
      await this.blobs.indexLink(name, digest, size);
      await this.remove(name, uuid);
      return { digest, size };
    });
  }

  /** the blob an earlier, interrupted completion of this upload stored and linked, if that is what `expected` names */
  private async completedBefore(name: string, expected: Digest[]): Promise<BlobInfo | undefined> {
    const [digest] = expected;
    if (expected.some((want) => want !== digest)) return undefined;
    if (!(await this.blobs.isLinked(name, digest))) return undefined;
    await this.blobs.touch([digest]); // online collection: the use is recorded before the check
    const size = await this.blobs.storedSize(digest);
    return size === undefined ? undefined : { digest, size };
  }

  cancel(name: string, uuid: string): Promise<void> {
    return this.locks.run(uuid, async () => {
      await this.open(name, uuid, 'sha256');
      await this.remove(name, uuid);
    });
  }

  /**
   * Streams `body` to the end of the upload's data, hashing as it goes; returns the new size.
   * The `last` bytes of an upload are committed (made durable) before they can become a blob; a
   * client that disconnects mid-chunk keeps what arrived: close (not cancel) persists it. With
   * `start`, the chunk must start where the stored bytes end (416 otherwise, nothing written): the
   * size the writer opened with is the check, so it costs no store call of its own.
   */
  private async write(upload: UploadStatus, body: AsyncIterable<Buffer> | Iterable<Buffer>, last: boolean, start?: number, writeBatch = WRITE_BATCH_BYTES, bulk: BulkBody = {}): Promise<number> {
    try {
      return await this.appendData(upload, body, last, start, writeBatch, bulk);
    } catch (err) {
      // a full store: the upload cannot go on (507 is terminal), and what it holds is space to give back
      if (isStorageFull(err)) await this.remove(upload.name, upload.uuid).catch(() => undefined);
      if (err instanceof WriteRefusedError) throw new RegistryError('BLOB_UPLOAD_INVALID', err.message, { detail: { size: upload.size } });
      // a concurrent request of this upload (on another instance) was kept instead: resume from what it holds
      if (err instanceof WriteConflictError) throw new UploadRangeError((await unlessMissing(this.driver.stat(layout.uploadData(upload.name, upload.uuid))))?.size ?? 0, err.message);
      throw err;
    }
  }

  private async appendData(upload: UploadStatus, body: AsyncIterable<Buffer> | Iterable<Buffer>, last: boolean, start: number | undefined, writeBatch: number, bulk: BulkBody): Promise<number> {
    const { name, uuid } = upload;
    const writer = await this.driver.writer(layout.uploadData(name, uuid), true);
    try {
      checkStart(writer.size, start);
    } catch (err) {
      await writer.close();
      throw err;
    }
    // the running hash, when this instance holds it for what is stored; otherwise bytes go unhashed
    const state = this.runningHash(upload, writer.size);
    // a whole blob in one request may be hashed on the hashing thread: its digest is wanted right
    // after, and no later chunk extends the hash
    const batches = new WriteBatches(writer, state?.hash, writeBatch, bulk.hashOffThread && last && writer.size === 0 ? upload.algorithm : undefined, bulk.reusedBuffers === true);
    let received = false;
    let hashed: HashState | DigestState | undefined = state;
    try {
      for await (const chunk of body) await batches.add(chunk);
      await batches.flush();
      if (state && batches.thread) hashed = { digest: `${state.algorithm}:${await batches.thread.digest()}`, algorithm: state.algorithm, offset: 0 };
      received = true;
    } finally {
      // what arrived before a disconnect is kept
      if (!received) await batches.flush().catch(() => undefined);
      batches.thread?.drop();
      this.hashes.delete(uuid);
      await (received && last ? writer.commit() : writer.close());
      // the hash covers what was handed to the writer; after a failed write it is of no use
      // (a hash given to the thread is of no use unless its digest came back)
      const kept = batches.thread && !received ? undefined : hashed;
      if (kept && writer.size === kept.offset + batches.written) this.remember(uuid, { ...kept, offset: writer.size });
    }
    return writer.size;
  }

  /** the running hash of the upload's first `size` stored bytes, if this instance has it (a new one for an empty upload) */
  private runningHash({ uuid, algorithm }: UploadStatus, size: number): HashState | undefined {
    if (size === 0) return { hash: newHasher(algorithm), algorithm, offset: 0 };
    const known = this.hashes.get(uuid);
    return known && 'hash' in known && known.offset === size && known.algorithm === algorithm ? known : undefined;
  }

  /** the digest of the upload's first `size` stored bytes: known, or read from the committed file */
  private async uploadDigest(upload: UploadStatus, size: number): Promise<Digest> {
    const known = this.hashes.get(upload.uuid);
    if (known && 'digest' in known && known.offset === size && known.algorithm === upload.algorithm) return known.digest;
    return hasherDigest(upload.algorithm, (await this.hashState(upload, size)).hash);
  }

  /** the hash of the upload's first `size` stored bytes: the running one, or read from the committed file */
  private async hashState(upload: UploadStatus, size: number): Promise<HashState> {
    const known = this.runningHash(upload, size);
    if (known) return known;
    const hash = newHasher(upload.algorithm);
    await this.hashStored(upload.name, upload.uuid, hash);
    return { hash, algorithm: upload.algorithm, offset: size };
  }

  private async hashStored(name: string, uuid: string, hash: Hash): Promise<void> {
    for await (const chunk of await this.driver.reader(layout.uploadData(name, uuid), 0)) hash.update(chunk as Buffer);
  }

  private remember(uuid: string, state: HashState | DigestState): void {
    if (this.hashes.size >= MAX_HASH_STATES) this.hashes.delete(this.hashes.keys().next().value as string);
    this.hashes.set(uuid, state);
  }

  /** the digest the blob is stored under (the first given), once the content matches every given digest */
  private async verify(upload: UploadStatus, size: number, expected: Digest[]): Promise<Digest> {
    const actual = new Map<Algorithm, Digest>([[upload.algorithm, await this.uploadDigest(upload, size)]]);
    for (const want of expected) {
      const algorithm = digestAlgorithm(want);
      if (!actual.has(algorithm)) actual.set(algorithm, await this.otherDigest(upload, size, algorithm));
      if (actual.get(algorithm) !== want) {
        await this.remove(upload.name, upload.uuid);
        throw new RegistryError('DIGEST_INVALID', `provided digest ${want} did not match uploaded content (${size} bytes with digest ${actual.get(algorithm)}); the upload was discarded`, {
          detail: { digest: want },
        });
      }
    }
    return expected[0];
  }

  /** a digest of another algorithm than the running hash's: the stored bytes are read again */
  private async otherDigest({ name, uuid }: UploadStatus, size: number, algorithm: Algorithm): Promise<Digest> {
    const hash = newHasher(algorithm);
    if (size > 0) await this.hashStored(name, uuid, hash);
    return hasherDigest(algorithm, hash);
  }

  /** verified data becomes the blob; when it is stored already (a concurrent upload won), keep that copy */
  private async moveToBlobs(name: string, uuid: string, digest: Digest): Promise<void> {
    await this.blobs.touch([digest]);
    if ((await this.blobs.storedSize(digest)) !== undefined) return;
    await this.driver.move(layout.uploadData(name, uuid), layout.blobData(digest));
  }

  private async remove(name: string, uuid: string): Promise<void> {
    this.hashes.delete(uuid);
    await unlessMissing(this.driver.delete(layout.uploadDir(name, uuid)));
  }

  private async storedSize(name: string, uuid: string): Promise<number> {
    return (await unlessMissing(this.driver.stat(layout.uploadData(name, uuid))))?.size ?? 0;
  }
}

/**
 * A chunk that starts elsewhere than where the stored bytes end changes nothing: out of order, or
 * sent again (a proxy's or client's retry of a request whose bytes were stored) and so appended twice.
 */
function checkStart(size: number, start: number | undefined): void {
  if (start !== undefined && start !== size) {
    throw new UploadRangeError(size, `chunk starts at byte ${start}, but the upload holds ${size} bytes: nothing was written; send the chunk that starts at ${size}`);
  }
}

/** a chunk carried more bytes than its Content-Range declared */
class ChunkOverrun extends Error {}

/**
 * the chunks of `body` up to `limit` bytes; a byte beyond them throws ChunkOverrun (those before
 * it are written). The request stream is read by hand: leaving a for-await over it early would
 * destroy it, and the socket with it, before the 416 is sent.
 */
async function* upTo(body: AsyncIterable<Buffer> | Iterable<Buffer>, limit: number): AsyncIterable<Buffer> {
  const chunks = Symbol.asyncIterator in body ? body[Symbol.asyncIterator]() : body[Symbol.iterator]();
  let left = limit;
  for (let next = await chunks.next(); !next.done; next = await chunks.next()) {
    const chunk = next.value;
    if (chunk.length > left) {
      if (left > 0) yield chunk.subarray(0, left);
      throw new ChunkOverrun();
    }
    left -= chunk.length;
    yield chunk;
  }
}

export function uploadUnknown(uuid: string): RegistryError {
  return new RegistryError('BLOB_UPLOAD_UNKNOWN', undefined, { detail: { uuid } });
}

/**
 * Gathers socket chunks (~64 KiB) into writes of about `batchBytes` (WRITE_BATCH_BYTES unless the caller says). While a
 * batch is being written (on the threadpool, or sent to S3) the next one fills and the written one
 * is hashed, so receiving, hashing and writing overlap.
 *
 * With `offload` (a whole blob in one request, hashed with that algorithm), a body of at least one
 * full batch is hashed on the hashing thread instead (`thread`, src/crypto/hash-thread.ts): the
 * main thread only copies the bytes there. A smaller body is hashed here: the thread's round trip
 * would cost more than its hash.
 */
class WriteBatches {
  private chunks: Buffer[] = [];
  private bytes = 0;
  private inFlight: Promise<void> = Promise.resolve();
  /** bytes handed to the writer (and to the hash, when there is one) so far */
  written = 0;
  /** the hash on the hashing thread, once a full first batch chose it */
  thread?: ThreadHash;

  constructor(
    private readonly writer: FileWriter,
    private readonly hash: Hash | undefined,
    private readonly batchBytes: number,
    private readonly offload?: Algorithm,
    /** the chunks are their producer's, read into again: not noted as short-lived */
    private readonly reused = false,
  ) {}

  async add(chunk: Buffer): Promise<void> {
    this.chunks.push(chunk);
    this.bytes += chunk.length;
    if (this.bytes >= this.batchBytes) await this.send(true);
  }

  /** writes what is gathered and waits until every write is done */
  async flush(): Promise<void> {
    await this.send(false);
    await this.inFlight;
  }

  /** starts writing the gathered chunks once the previous write is done, then hashes them meanwhile */
  private async send(full: boolean): Promise<void> {
    await this.inFlight;
    if (this.bytes === 0) return;
    const batch = this.chunks;
    const bytes = this.bytes;
    this.written += bytes;
    this.chunks = [];
    this.bytes = 0;
    this.inFlight = this.writer.write(batch);
    this.inFlight.catch(() => undefined); // a failure surfaces at the next send or flush
    if (full && this.offload && this.written === bytes) this.thread = threadHash(this.offload);
    if (this.thread) await this.thread.update(batch);
    else if (this.hash) for (const chunk of batch) this.hash.update(chunk);
    if (!this.reused) shortLivedBytes(bytes);
  }
}
