/**
 * Bytes [start, end) of an open file as a Readable, for serving blobs.
 *
 * Read as a stream (for await, 'data'), it hands out a new Buffer per chunk, like fs.ReadStream.
 * Piped into a destination (fastify pipes a reply stream into the response), it reads into two
 * buffers it reuses, each only after the destination's write callback says the bytes left it. A
 * pull then allocates nothing per chunk: with a fresh 1 MiB Buffer per read, the garbage collector
 * took about 0.7 CPU s per GiB pulled (more than the reads and writes themselves).
 */
import type { FileHandle } from 'node:fs/promises';
import { Readable, type Writable } from 'node:stream';

export class FileReadStream extends Readable {
  private position: number;
  private piped = false;

  constructor(
    private readonly fh: FileHandle,
    start: number,
    private readonly end: number,
    private readonly chunkSize: number,
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
    const size = Math.min(this.chunkSize, Math.max(this.end - this.position, 1));
    const buffers: Buffer[] = [];
    const inFlight: (Promise<void> | undefined)[] = [undefined, undefined];
    for (let i = 0; this.position < this.end; i ^= 1) {
      await inFlight[i]; // buffer i is free once its bytes were written
      if (this.destroyed) return; // the response went away (fastify destroys the source)
      const chunk = await this.readInto((buffers[i] ??= Buffer.allocUnsafeSlow(size)));
      if (this.destroyed) return;
      if (chunk.length === 0) break; // the file is shorter than it was: end early, as fs streams do
      const written = writeTo(dest, chunk);
      written.catch(() => undefined); // a failure surfaces where it is awaited, not as unhandled meanwhile
      inFlight[i] = written;
    }
    await Promise.all(inFlight);
    if (this.destroyed) return;
    if (endDest) dest.end();
    // end this stream too, so whoever waits for it (fastify's end-of-stream check) sees it finish
    this.push(null);
    this.resume();
  }

  /** reads up to buffer.length bytes at the current position; the part of `buffer` filled */
  private async readInto(buffer: Buffer): Promise<Buffer> {
    const want = Math.min(buffer.length, this.end - this.position);
    const { bytesRead } = await this.fh.read(buffer, 0, want, this.position);
    this.position += bytesRead;
    return bytesRead === buffer.length ? buffer : buffer.subarray(0, bytesRead);
  }
}

/** writes `chunk`, resolving when the destination is done with it (its write callback) */
function writeTo(dest: Writable, chunk: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    dest.write(chunk, (err) => (err ? reject(err) : resolve()));
  });
}
