/**
 * Bytes [start, end) of an open file as a Readable, for serving blobs.
 *
 * Read as a stream (for await, 'data'), it hands out a new Buffer per chunk, like fs.ReadStream.
 * Piped into a destination (fastify pipes a reply stream into the response), it reads into two
 * buffers it reuses, each only after the destination's write callback says the bytes left it. A
 * pull then allocates nothing per chunk: with a fresh 1 MiB Buffer per read, the garbage collector
 * took about 0.7 CPU s per GiB pulled (more than the reads and writes themselves).
 *
 * A write stays pending, holding its buffer, while the socket's kernel buffer is full: a client
 * that stops reading pins what was handed to its socket. So a response starts with two 16 KiB
 * buffers of its own (as much as Distribution's 32 KiB copy buffer per connection), and borrows
 * two large ones from a pool shared by all responses only while the client keeps up (its writes
 * were done when their buffer came round again), giving them back as soon as it does not. 300
 * stalled downloads pinned 590 MiB with two 1 MiB buffers each (test/robustness/stalled-downloads).
 */
import type { FileHandle } from 'node:fs/promises';
import { Readable, type Writable } from 'node:stream';
import { shortLivedBytes } from './short-lived-bytes.js';
import type { BufferPool } from './buffer-pool.js';

/** the buffers each piped response owns */
const SMALL_CHUNK = 16 * 1024;
/** writes in a row the client must have kept up with before the response borrows large buffers */
const KEPT_UP_TO_GROW = 2;

export class FileReadStream extends Readable {
  private position: number;
  private piped = false;

  constructor(
    private readonly fh: FileHandle,
    start: number,
    private readonly end: number,
    private readonly chunkSize: number,
    /** large buffers to borrow while the client keeps up (without one: small buffers only) */
    private readonly large?: BufferPool,
  ) {
    super({ highWaterMark: chunkSize });
    this.position = start;
  }

  /** the stream's own reads: a new Buffer each (the reader keeps it) */
  override _read(): void {
    const want = Math.min(this.chunkSize, this.end - this.position);
    if (want <= 0) {
      this.push(null);
      return;
    }
    shortLivedBytes(want);
    this.readInto(Buffer.allocUnsafeSlow(want)).then(
      (chunk) => {
        if (!this.destroyed) this.push(chunk.length > 0 ? chunk : null);
      },
      (err: Error) => this.destroy(err),
    );
  }

  override _destroy(err: Error | null, callback: (err?: Error | null) => void): void {
    // FileHandle.close waits for a read still in flight
    this.fh.close().then(
      () => callback(err),
      (closeErr: Error) => callback(err ?? closeErr),
    );
  }

  override pipe<T extends NodeJS.WritableStream>(dest: T, options?: { end?: boolean }): T {
    // once the stream has been read some other way, the ordinary pipe carries on from there
    if (this.piped || this.readableFlowing !== null || this.readableLength > 0 || this.readableEnded) {
      return super.pipe(dest, options);
    }
    this.piped = true;
    this.pump(dest as unknown as Writable, options?.end !== false).catch((err: Error) => this.destroy(err));
    return dest;
  }

  private async pump(dest: Writable, endDest: boolean): Promise<void> {
    const small: Buffer[] = [];
    let large: Buffer[] | undefined;
    const inFlight: (Write | undefined)[] = [undefined, undefined];
    /** writes in a row the destination had finished by the time their buffer came round again */
    let keptUp = 0;
    try {
      for (let i = 0; this.position < this.end; i ^= 1) {
        const previous = inFlight[i];
        if (previous) {
          keptUp = previous.finished ? keptUp + 1 : 0;
          await previous.done; // buffer i is free once its bytes were written
        }
        if (this.destroyed) return; // the response went away (fastify destroys the source)
        if (large && keptUp === 0) {
          // the client reads slower than the disk: large buffers would only wait in the socket
          await inFlight[i ^ 1]?.done;
          inFlight[i ^ 1] = undefined;
          this.large?.give(large);
          large = undefined;
          if (this.destroyed) return;
        } else if (!large && keptUp >= KEPT_UP_TO_GROW && this.end - this.position > SMALL_CHUNK) {
          large = this.large?.take(2);
        }
        const buffer = large ? large[i] : (small[i] ??= Buffer.allocUnsafeSlow(Math.min(SMALL_CHUNK, this.end - this.position)));
        const chunk = await this.readInto(buffer);
        if (this.destroyed) return;
        if (chunk.length === 0) break; // the file is shorter than it was: end early, as fs streams do
        inFlight[i] = writeTo(dest, chunk);
      }
      await Promise.all(inFlight.map((write) => write?.done));
      if (this.destroyed) return;
      if (endDest) dest.end();
      // end this stream too, so whoever waits for it (fastify's end-of-stream check) sees it finish
      this.push(null);
      this.resume();
    } finally {
      if (large) {
        // a destroyed socket calls back its pending writes (with an error): only then is a buffer free
        await Promise.allSettled(inFlight.map((write) => write?.done));
        this.large?.give(large);
      }
    }
  }

  /** reads up to buffer.length bytes at the current position; the part of `buffer` filled */
  private async readInto(buffer: Buffer): Promise<Buffer> {
    const want = Math.min(buffer.length, this.end - this.position);
    const { bytesRead } = await this.fh.read(buffer, 0, want, this.position);
    this.position += bytesRead;
    return bytesRead === buffer.length ? buffer : buffer.subarray(0, bytesRead);
  }
}

/** a chunk handed to the destination */
interface Write {
  /** settles with the destination's write callback: the chunk's buffer is free again */
  done: Promise<void>;
  /** whether it has settled */
  finished: boolean;
}

function writeTo(dest: Writable, chunk: Buffer): Write {
  const write: Write = {
    finished: false,
    done: new Promise((resolve, reject) => {
      dest.write(chunk, (err) => {
        write.finished = true;
        if (err) reject(err);
        else resolve();
      });
    }),
  };
  write.done.catch(() => undefined); // a failure surfaces where it is awaited, not as unhandled meanwhile
  return write;
}
