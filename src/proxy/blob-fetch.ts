/**
 * Blobs fetched from the upstream, one fetch per digest however many clients ask at once. The
 * upstream's body is written to an upload session of the core (hashed as it is written, on the
 * hashing thread: src/crypto/hash-thread.ts) and
 * handed to the clients reading along; the core moves it under blobs/ only once its digest checked
 * out, so a fetch that fails (the upstream dies mid-body, wrong bytes) leaves nothing there.
 *
 * Reading along: clients that join before the first byte is handed on read the upstream's bytes as
 * they arrive, at the pace of the slowest of them (a writable buffer each, waited on); clients that
 * join later wait for the commit and read from storage. The last batch is handed on only after the
 * digest checked out, so a client never receives a complete body with the wrong bytes.
 *
 * The body is read up to the size the upstream declared and no further: the GET's Content-Length,
 * which must agree with the size its HEAD told the clients (remembered here), or that size when
 * the GET declares none. A client is thus never told one size while the fetch reads another.
 *
 * A fetch nobody waits for any more is cancelled (docs/decisions.md): when the last client
 * reading along has gone and none waits for the commit, the upstream's connection and the upload
 * are given up, and the next pull fetches the blob again.
 */
import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import type { BlobStore } from '../registry/blobs.js';
import { blobUnknown } from '../registry/blobs.js';
import { digestAlgorithm, type Digest } from '../registry/digest.js';
import { RegistryError } from '../registry/errors.js';
import type { UploadSessions } from '../registry/uploads.js';
import { BatchReader } from './batch-reader.js';
import { BLOB_BATCH, BlobBody } from './blob-get.js';
import { describe, rethrowUpstream, UpstreamError } from './errors.js';
import type { ProxyStats } from './stats.js';
import type { Upstream, UpstreamResponse } from './upstream.js';

/**
 * The upstream's body arrives in batches of this size, each one Buffer read into again once
 * nothing holds it (blob-get.ts). The readers get one batch at a time, written in one go
 * (src/proxy/batch-reader.ts); the upload writes one batch per file write (bench proxy-cold-big).
 * A body that came through undici instead (blob-get.ts reads only the common answer) arrives in
 * pieces of at most 64 KiB, gathered into batches of this size without copying them.
 */
const BATCH = BLOB_BATCH;
/** the sizes upstream HEADs told clients, remembered for this many digests (the oldest forgotten first) */
const TOLD_SIZES = 10_000;

export interface BlobFetchOptions {
  /** the upstream's response headers must arrive within this */
  fetchTimeoutMs: number;
  /** the body is given up when no byte arrived for this long */
  idleTimeoutMs: number;
}

export class BlobFetches {
  private readonly inflight = new Map<Digest, BlobFetch>();
  /** the size the upstream's HEAD declared for a digest, which the clients were told (Content-Length) */
  private readonly told = new Map<Digest, number>();

  constructor(
    private readonly upstream: Upstream,
    private readonly uploads: UploadSessions,
    private readonly blobs: BlobStore,
    private readonly logger: Logger,
    private readonly options: BlobFetchOptions,
    private readonly stats: ProxyStats,
  ) {}

  /** the size the upstream's HEAD declared for `digest` (a client was told it): the fetch must read that many bytes */
  declared(digest: Digest, size: number): void {
    this.told.delete(digest);
    this.told.set(digest, size);
    if (this.told.size > TOLD_SIZES) this.told.delete(this.told.keys().next().value!);
  }

  /** the fetch of `digest` under way, once its size is known */
  async underway(digest: Digest): Promise<BlobFetch | undefined> {
    const fetch = this.inflight.get(digest);
    if (!fetch) return undefined;
    await fetch.started.catch(rethrowUpstream(`blob ${digest}`));
    return fetch;
  }

  /** the blob's bytes for a client of `name`: read along with the fetch under way, or a new one */
  async open(name: string, digest: Digest): Promise<Readable> {
    let fetch = this.inflight.get(digest);
    if (!fetch) {
      fetch = new BlobFetch(name, digest, this.told.get(digest), this.upstream, this.uploads, this.blobs, this.logger, this.options);
      this.inflight.set(digest, fetch);
      const started = fetch;
      const forget = () => {
        if (this.inflight.get(digest) === started) this.inflight.delete(digest);
      };
      fetch.done.then(() => {
        this.stats.blobBytesFetched += started.size;
        forget();
      }, forget);
    }
    await fetch.started.catch(rethrowUpstream(`blob ${digest}`));
    const told = this.told.get(digest);
    if (told !== undefined && told !== fetch.size) throw this.contradicts(digest, told, fetch.size);
    const live = fetch.join(name);
    if (live) return live;
    await fetch.committed();
    return this.blobs.open(digest);
  }

  private contradicts(digest: Digest, told: number, size: number): UpstreamError {
    return new UpstreamError(`the upstream registry ${this.upstream.host} declared ${told} bytes for ${digest} and then sent ${size}; nothing was served`);
  }
}

class BlobFetch {
  /** resolves once the upstream's headers arrived (the size is known); rejects like the upstream did */
  readonly started: Promise<void>;
  /** resolves once the blob is under blobs/ and linked into every repository that asked */
  readonly done: Promise<void>;
  size = 0;
  private readonly readers = new Set<BatchReader>();
  /** repositories that asked, besides the one the upload belongs to */
  private readonly others = new Set<string>();
  private forwarding = false;
  /** clients that joined too late to read along, waiting for the commit */
  private waiting = 0;
  /** the blob was committed, or the fetch failed */
  private settled = false;
  /** cancelled because every client left */
  private abandoned = false;
  /** the last batch, handed on only once the digest checked out */
  private held?: Buffer[];
  private readonly abort = new AbortController();

  constructor(
    private readonly name: string,
    private readonly digest: Digest,
    /** the size the upstream's HEAD declared, if one did */
    private readonly told: number | undefined,
    private readonly upstream: Upstream,
    private readonly uploads: UploadSessions,
    private readonly blobs: BlobStore,
    private readonly logger: Logger,
    private readonly options: BlobFetchOptions,
  ) {
    const response = this.request();
    this.started = response.then(() => undefined);
    this.done = response.then((res) => this.store(res));
    this.done.catch(() => undefined); // awaited by readers; failures are logged in store()
  }

  /** a live stream of the bytes while none was handed on yet; undefined after (read storage once done) */
  join(name: string): BatchReader | undefined {
    if (name !== this.name) this.others.add(name);
    if (this.forwarding) return undefined;
    const reader = new BatchReader();
    this.readers.add(reader);
    reader.on('close', () => {
      this.readers.delete(reader);
      if (this.readers.size === 0 && this.waiting === 0 && !this.settled) {
        this.abandoned = true;
        this.abort.abort();
      }
    });
    return reader;
  }

  /** waits for the commit as a client that joined too late to read along (it keeps the fetch going) */
  async committed(): Promise<void> {
    this.waiting++;
    try {
      await this.done;
    } finally {
      this.waiting--;
    }
  }

  private async request(): Promise<UpstreamResponse> {
    const res = await this.upstream.request({
      method: 'GET',
      repository: this.name,
      path: `${this.name}/blobs/${this.digest}`,
      timeoutMs: this.options.fetchTimeoutMs,
      signal: this.abort.signal,
      followRedirects: true,
      ownBuffers: true,
    });
    if (res.status === 404) {
      res.cancel();
      throw blobUnknown(this.digest);
    }
    const header = res.headers.get('content-length');
    const declared = header === null ? this.told : Number(header);
    if (declared === undefined || !Number.isSafeInteger(declared) || declared < 0 || (this.told !== undefined && declared !== this.told)) {
      res.cancel();
      const said = declared === undefined ? 'no size' : this.told !== undefined && declared !== this.told ? `${header} bytes where its HEAD said ${this.told}` : `an invalid size (${header})`;
      throw new UpstreamError(`the upstream registry ${this.upstream.host} gave ${said} for ${this.digest}; nothing was served`);
    }
    this.size = declared;
    return res;
  }

  private async store(res: UpstreamResponse): Promise<void> {
    const started = Date.now();
    // hashed with the digest's algorithm as the bytes arrive
    const algorithm = digestAlgorithm(this.digest);
    const upload = await this.uploads.start(this.name, algorithm);
    const own = res.body instanceof BlobBody ? res.body : undefined;
    try {
      await this.uploads.complete(this.name, upload.uuid, [this.digest], this.body(res), undefined, algorithm, undefined, BATCH, { hashOffThread: true, reusedBuffers: own !== undefined });
    } catch (err) {
      this.settled = true;
      this.abort.abort();
      await this.uploads.cancel(this.name, upload.uuid).catch(() => undefined); // a wrong digest removed it already
      if (this.abandoned) {
        this.logger.info({ repository: this.name, digest: this.digest }, 'every client left: the blob fetch was cancelled and nothing cached');
        throw new UpstreamError(`every client left: the fetch of ${this.digest} was cancelled`);
      }
      const reason = err instanceof RegistryError && err.code === 'DIGEST_INVALID' ? 'its bytes do not match the digest' : describe(err);
      const failure = new UpstreamError(`fetching ${this.digest} from the upstream registry ${this.upstream.host} failed (${reason}); nothing was cached, try again`);
      for (const reader of this.readers) reader.destroy(failure);
      this.logger.warn({ repository: this.name, digest: this.digest, reason }, 'fetching a blob from the upstream failed; nothing was cached');
      throw failure;
    }
    this.settled = true;
    await Promise.all([...this.others].map((name) => this.blobs.link(name, this.digest)));
    this.logger.info({ repository: this.name, digest: this.digest, size: this.size, ms: Date.now() - started }, 'fetched blob from the upstream');
    const held = this.held ?? [];
    // the last batch's buffers are read into again (by the next fetch) once every reader wrote them
    // (not when a reader's end failed: what its socket holds is left alone)
    Promise.all([...this.readers].map((reader) => reader.finish(held))).then(
      () => {
        if (own) for (const buffer of held) own.release(buffer);
      },
      () => undefined,
    );
  }

  /**
   * the upstream's body for the upload as it arrives, batch by batch (or chunk by chunk through
   * undici: the upload gathers them into its writes); the upload writes and hashes them, and the
   * readers get the same batches, each once the next one is complete (the last one once the digest
   * checked out). A batch of the body's own buffers goes back to it once both are done with it:
   * the upload has written and hashed it when it asks for the next one, the readers when handOn
   * resolved.
   */
  private async *body(res: UpstreamResponse): AsyncGenerator<Buffer> {
    const idle = setTimeout(() => this.abort.abort(), this.options.idleTimeoutMs);
    const own = res.body instanceof BlobBody ? res.body : undefined;
    let batch: Buffer[] = [];
    let batchBytes = 0;
    let left = this.size;
    const handOnPrevious = async () => {
      const previous = this.held;
      if (previous) {
        await this.handOn(previous);
        if (own) for (const buffer of previous) own.release(buffer);
      }
      this.held = batch;
      batch = [];
      batchBytes = 0;
    };
    if (own) own.onBytes = () => idle.refresh();
    try {
      for await (const chunk of own ? own.batches() : (res.body as AsyncIterable<Buffer>)) {
        if (!own) idle.refresh();
        const piece = chunk.byteLength <= left ? chunk : chunk.subarray(0, left);
        left -= piece.byteLength;
        batch.push(piece);
        batchBytes += piece.byteLength;
        yield piece;
        if (left === 0) break; // the declared size: whatever else the upstream sends is not read
        if (batchBytes >= BATCH) await handOnPrevious();
      }
      if (left > 0) throw new Error(`its body ended after ${this.size - left} of the ${this.size} bytes it declared`);
      if (batchBytes > 0) await handOnPrevious();
    } finally {
      clearTimeout(idle);
    }
  }

  /** hands a batch to every reader, waiting for the slow ones to take it (a reader that closes is left) */
  private async handOn(chunks: readonly Buffer[]): Promise<void> {
    this.forwarding = true;
    await Promise.all([...this.readers].map((reader) => reader.send(chunks)));
  }
}
