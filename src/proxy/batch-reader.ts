/**
 * A client's stream of a blob being fetched (src/proxy/blob-fetch.ts), fed a batch of the upstream's
 * chunks at a time (about 1 MiB of 64 KiB pieces).
 *
 * Piped into a response (fastify pipes a reply stream), it writes each batch itself, corked, so the
 * batch leaves in one writev, and takes the next once the batch's last write called back. Through
 * an ordinary pipe the response's socket (16 KiB high-water mark) said "full" after the first
 * 64 KiB piece of every batch: the pipe paused, and each piece went out alone a tick later, one
 * socket write and a pause/resume round of the stream machinery per 64 KiB (socket writes were
 * 15% of a cold mirror pull's main thread, docs/performance.md). Per client this holds what the
 * PassThrough it replaces did: one batch in the socket.
 *
 * Read any other way (for await, or piped after it was read), it is an ordinary Readable of copies
 * of the chunks, with the back-pressure of its high-water mark: the fetch reads into a batch's
 * buffer again once send() resolved (blob-get.ts), and a reader may keep what it read.
 */
import { Readable, type Writable } from 'node:stream';

export class BatchReader extends Readable {
  private dest?: Writable;
  private endDest = true;
  /** settles when the reader wants more (read called, the batch written, or the stream closed) */
  private wanted?: () => void;

  constructor() {
    super();
    this.once('close', () => this.wanted?.());
  }

  override _read(): void {
    this.wanted?.();
  }

  override pipe<T extends NodeJS.WritableStream>(dest: T, options?: { end?: boolean }): T {
    // once the stream has been read some other way, the ordinary pipe carries on from there
    if (this.dest || this.readableFlowing !== null || this.readableLength > 0 || this.readableEnded) return super.pipe(dest, options);
    this.dest = dest as unknown as Writable;
    this.endDest = options?.end !== false;
    return dest;
  }

  /** hands the client `chunks`; resolves once it can take more (or went away), and nothing of it holds `chunks` any more */
  send(chunks: readonly Buffer[]): Promise<void> {
    if (this.destroyed || chunks.length === 0) return Promise.resolve();
    const wanted = new Promise<void>((resolve) => (this.wanted = resolve));
    const dest = this.dest;
    if (!dest) {
      let open = true;
      for (const chunk of chunks) open = this.push(Buffer.from(chunk));
      if (open) this.wanted!();
      return wanted;
    }
    dest.cork();
    chunks.forEach((chunk, i) => (i === chunks.length - 1 ? dest.write(chunk, () => this.wanted?.()) : dest.write(chunk)));
    dest.uncork();
    return wanted;
  }

  /** hands the client the last `chunks` and ends its stream */
  async finish(chunks: readonly Buffer[]): Promise<void> {
    await this.send(chunks);
    if (this.destroyed) return;
    if (this.dest && this.endDest) this.dest.end();
    // end this stream too, so whoever waits for it (fastify's end-of-stream check, the cache's 'end') sees it finish
    this.push(null);
    if (this.dest) this.resume();
  }
}
