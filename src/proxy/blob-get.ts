/**
 * The GET of a blob's body from the upstream (or the host it redirects to), over a connection of
 * berth's own (`net`/`tls` with the `onread` option) whose socket reads land straight in the
 * fetch's batch buffers: 1 MiB Buffers reused for the whole transfer, each written to the upload,
 * hashed and sent to the clients as one piece. Through undici every socket read was a fresh 64 KiB
 * Buffer: 16,000 per GiB to allocate and collect (the collector was 15-19% of a cold pull's main
 * thread), and 16 pieces per file write and per client write (docs/performance.md, issue 31).
 *
 * Only the request is made here: what the answer means (its status, a challenge, a redirect's
 * target, the Content-Length against the size the clients were told, the digest) is decided where
 * every other upstream answer is, in upstream.ts and blob-fetch.ts. TLS is verified as undici
 * verifies it: Node's CA store with NODE_EXTRA_CA_CERTS, the host name checked.
 *
 * Only the common answer's body is read: a 200 with a Content-Length and no transfer coding. Any
 * other answer is returned with its status and headers and its body unread (the connection closes);
 * a 200 framed otherwise (chunked, or up to the connection's close) is asked again through undici
 * by upstream.ts. One request per connection (`Connection: close`): a blob is read to its end.
 */
import type { IncomingHttpHeaders } from 'node:http';
import net from 'node:net';
import { Readable } from 'node:stream';
import tls from 'node:tls';

/** the bytes of one batch: one socket read region, one file write, one client write */
export const BLOB_BATCH = 1024 * 1024;
/** batches complete and not taken, or taken and not released, at which reading pauses (what a transfer holds: these and the one filling) */
const BATCHES_AHEAD = 3;
/** batch buffers kept between transfers (a cold image pull is many fetches of a few MiB), dropped once unused for SPARE_MS */
const SPARES = 8;
const SPARE_MS = 5_000;
/** where the answer's head is read (its body bytes are copied out) */
const HEAD_BUFFER = 16 * 1024;
/** the most an answer's head may take */
const MAX_HEAD = 64 * 1024;

export interface BlobAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  /** a 200 with a Content-Length and no transfer coding: its body; otherwise undefined, the connection closed */
  body?: BlobBody;
}

/**
 * GET `url` with `headers` (the caller's: user-agent, authorization); resolves with the answer's
 * head, rejects when the connection fails before it. `signal` aborts the request and its body.
 */
export function getBlob(url: URL, headers: Record<string, string>, signal: AbortSignal): Promise<BlobAnswer> {
  return new Promise((resolve, reject) => {
    let request: string;
    try {
      request = requestHead(url, headers);
    } catch (err) {
      return reject(err);
    }
    if (signal.aborted) return reject(signal.reason);
    const host = url.hostname.replace(/^\[|\]$/g, '');
    const https = url.protocol === 'https:';
    const port = Number(url.port || (https ? 443 : 80));
    let connection: BlobConnection | undefined;
    const onread = { buffer: () => connection?.region() ?? Buffer.allocUnsafe(HEAD_BUFFER), callback: (n: number, buffer: Buffer) => connection?.onRead(buffer, n) ?? false };
    const socket = https
      ? tls.connect({ host, port, servername: net.isIP(host) ? undefined : host, onread } as tls.ConnectionOptions)
      : net.connect({ host, port, onread });
    connection = new BlobConnection(socket, signal, resolve, reject);
    socket.setNoDelay(true);
    socket.write(request, 'latin1'); // sent once connected (and, over TLS, once the handshake is done)
  });
}

/** the request's head; a header value that would break it (a line break from a token service, say) is refused */
function requestHead(url: URL, headers: Record<string, string>): string {
  let head = `GET ${url.pathname}${url.search} HTTP/1.1\r\nhost: ${url.host}\r\nconnection: close\r\n`;
  for (const [name, value] of Object.entries(headers)) {
    if (/[\r\n\0]/.test(name) || /[\r\n\0]/.test(value)) throw new Error(`the ${name} header holds a line break or NUL`);
    head += `${name}: ${value}\r\n`;
  }
  return `${head}\r\n`;
}

/** one GET on one connection: the answer's head, then its body into the body's buffers */
class BlobConnection {
  private readonly scratch = Buffer.allocUnsafe(HEAD_BUFFER);
  /** the head read so far (waiting for its end) */
  private head: Buffer[] | undefined = [];
  private headBytes = 0;
  private body: BlobBody | undefined;

  constructor(
    private readonly socket: net.Socket,
    private readonly signal: AbortSignal,
    private resolve: ((answer: BlobAnswer) => void) | undefined,
    private reject: ((err: unknown) => void) | undefined,
  ) {
    const aborted = () => this.fail(signal.reason instanceof Error ? signal.reason : new Error('aborted'));
    signal.addEventListener('abort', aborted, { once: true });
    socket.on('error', (err) => this.fail(err));
    socket.on('close', () => {
      signal.removeEventListener('abort', aborted);
      this.fail(new Error('the connection closed'));
    });
  }

  /** where the next socket read lands: the body's filling batch, or the head's scratch buffer */
  region(): Buffer {
    const body = this.body;
    return body && !body.complete ? body.region() : this.scratch;
  }

  /** a socket read of `n` bytes into `buffer` (what region() gave); false pauses reading */
  onRead(buffer: Buffer, n: number): boolean {
    if (this.body) return this.body.landed(buffer, n);
    if (!this.head) return false;
    return this.onHead(buffer.subarray(0, n));
  }

  private onHead(data: Buffer): boolean {
    const head = this.head!;
    head.push(Buffer.from(data)); // the scratch buffer is read into again
    this.headBytes += data.length;
    const bytes = head.length === 1 ? head[0] : Buffer.concat(head);
    this.head = [bytes];
    const end = bytes.indexOf('\r\n\r\n', Math.max(0, bytes.length - data.length - 3), 'latin1');
    if (end < 0) {
      if (this.headBytes <= MAX_HEAD) return true;
      this.fail(new Error(`its answer's head is over ${MAX_HEAD} bytes`));
      return false;
    }
    this.head = undefined;
    const parsed = parseHead(bytes.toString('latin1', 0, end));
    if (!parsed) {
      this.fail(new Error('its answer is not HTTP/1.1'));
      return false;
    }
    const { status, headers } = parsed;
    const length = headers['content-length'];
    const readable = status === 200 && headers['transfer-encoding'] === undefined && typeof length === 'string' && /^\d{1,15}$/.test(length);
    const resolve = this.resolve!;
    this.resolve = this.reject = undefined;
    if (!readable) {
      this.socket.destroy();
      resolve({ status, headers });
      return false;
    }
    const body = new BlobBody(this, Number(length));
    if (!body.complete) this.body = body; // an empty body is complete (and its connection closed) already
    // body bytes that came with the head (beyond the declared length: not read)
    const rest = bytes.subarray(end + 4);
    let more = body.copyIn(rest.subarray(0, Math.min(rest.length, body.length)));
    if (body.complete) more = false;
    resolve({ status, headers, body });
    return more;
  }

  resume(): void {
    if (!this.socket.destroyed) this.socket.resume();
  }

  /** the body's last byte arrived, or its reader left: the connection is not used again */
  close(): void {
    this.body = undefined;
    this.socket.destroy();
  }

  private fail(err: Error): void {
    const reject = this.reject;
    this.resolve = this.reject = undefined;
    this.head = undefined;
    const body = this.body;
    this.body = undefined;
    if (!this.socket.destroyed) this.socket.destroy();
    // as undici reports a failure: the socket's error (its code) as the cause
    reject?.(this.signal.aborted ? this.signal.reason : new Error(err.message, { cause: err }));
    body?.fail(err);
  }
}

/** the status line and the headers (names in lower case, repeated ones as arrays); undefined when it is not HTTP/1.x */
function parseHead(text: string): { status: number; headers: IncomingHttpHeaders } | undefined {
  const lines = text.split('\r\n');
  const status = /^HTTP\/1\.[01] (\d{3})(?: |$)/.exec(lines[0]);
  if (!status) return undefined;
  const headers: Record<string, string | string[]> = {};
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    if (colon <= 0) return undefined;
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    const before = headers[name];
    if (before === undefined) headers[name] = value;
    else if (name === 'content-length') {
      if (before !== value) return undefined; // two lengths: not an answer to read
    } else headers[name] = Array.isArray(before) ? [...before, value] : [before, value];
  }
  return { status: Number(status[1]), headers: headers as IncomingHttpHeaders };
}

/** BLOB_BATCH buffers of finished transfers that nothing holds, for the next ones */
class SpareBatches {
  private readonly buffers: Buffer[] = [];
  private readonly drop = setTimeout(() => (this.buffers.length = 0), SPARE_MS).unref();

  take(): Buffer {
    this.drop.refresh();
    return this.buffers.pop() ?? Buffer.allocUnsafeSlow(BLOB_BATCH);
  }

  give(buffers: Buffer[]): void {
    this.drop.refresh();
    this.buffers.push(...buffers.slice(0, SPARES - this.buffers.length));
  }
}

const spares = new SpareBatches();

/**
 * A blob's body, read into batches of BLOB_BATCH bytes (the last one shorter). `batches()` hands
 * each one out whole and takes it back with `release()`: a released buffer is read into again, so
 * the caller releases a batch only once nothing holds it any more (its file write, its hash copy
 * and every client's write done). Reading pauses while BATCHES_AHEAD batches are taken or waiting.
 *
 * Read as a stream instead (for await, 'data', pipe), it is an ordinary Readable of the batches,
 * none of them read into again.
 */
export class BlobBody extends Readable {
  /** released buffers, read into again */
  private readonly free: Buffer[] = [];
  private filling: Buffer | undefined;
  private fillAt = 0;
  /** the size of the batch being filled (the filling buffer may be longer: a pooled one for the last batch) */
  private fillEnd = 0;
  /** bytes not yet in a batch */
  private left: number;
  /** complete batches not yet handed out */
  private readonly ready: Buffer[] = [];
  /** batches handed out by batches() and not released */
  private taken = 0;
  private mode: 'waiting' | 'batches' | 'stream' = 'waiting';
  private paused = false;
  private failure: Error | undefined;
  private wakeTaker: (() => void) | undefined;
  /** called at every socket read of the body (a fetch's idle timer) */
  onBytes: (() => void) | undefined;

  constructor(
    private readonly connection: BlobConnection,
    readonly length: number,
  ) {
    super({ highWaterMark: 1 }); // counted in bytes: one batch waiting is enough
    this.left = length;
    if (length === 0) this.connection.close();
  }

  /** every byte is in a batch */
  get complete(): boolean {
    return this.left === 0 && this.filling === undefined;
  }

  /** the free part of the batch being filled (a released buffer, or a new one) */
  region(): Buffer {
    if (!this.filling) {
      this.fillEnd = Math.min(BLOB_BATCH, this.left);
      // batches() gives its buffers back: a body of a batch or more reads into pooled ones (read
      // as a stream instead, they are the reader's and never come back)
      const pooled = this.mode !== 'stream' && this.length >= BLOB_BATCH;
      this.filling = pooled ? (this.free.pop() ?? spares.take()) : Buffer.allocUnsafeSlow(this.fillEnd);
      this.fillAt = 0;
    }
    return this.filling.subarray(this.fillAt, this.fillEnd);
  }

  /** `bytes` (read elsewhere) copied into the batches; false when reading must pause */
  copyIn(bytes: Buffer): boolean {
    let more = true;
    for (let at = 0; at < bytes.length; ) {
      const n = bytes.copy(this.region(), 0, at);
      at += n;
      more = this.filled(n);
    }
    return more;
  }

  /** `n` bytes read into `buffer`: region() (or, for the first read after the head, another one, copied in); false when reading must pause */
  landed(buffer: Buffer, n: number): boolean {
    const filling = this.filling;
    if (filling && buffer.buffer === filling.buffer && buffer.byteOffset === filling.byteOffset + this.fillAt) return this.filled(n);
    return this.copyIn(buffer.subarray(0, n));
  }

  /** `n` bytes landed in region(); false when reading must pause */
  private filled(n: number): boolean {
    this.onBytes?.();
    this.fillAt += n;
    this.left -= n;
    if (this.fillAt === this.fillEnd) {
      this.ready.push(this.fillEnd === this.filling!.length ? this.filling! : this.filling!.subarray(0, this.fillEnd));
      this.filling = undefined;
      if (this.left === 0) this.connection.close();
      this.deliver();
    }
    this.paused = this.left > 0 && this.ready.length + this.taken >= BATCHES_AHEAD;
    return !this.paused;
  }

  /** the batches in order, each to be given back with release() once nothing holds it */
  async *batches(): AsyncGenerator<Buffer> {
    if (this.mode !== 'waiting') throw new Error('the body is read already');
    this.mode = 'batches';
    try {
      for (;;) {
        while (this.ready.length === 0 && this.failure === undefined && !this.complete) {
          await new Promise<void>((resolve) => (this.wakeTaker = resolve));
        }
        const batch = this.ready.shift();
        if (!batch) {
          if (this.failure) throw this.failure; // what arrived before is handed out first
          return;
        }
        this.taken++;
        this.unpause();
        yield batch;
      }
    } finally {
      if (!this.complete) this.connection.close(); // left before the end: the rest is not wanted
    }
  }

  /** a batch from batches() that nothing holds any more: read into again */
  release(batch: Buffer): void {
    this.taken--;
    // a pooled buffer (the last batch is a part of one) is read into again
    if (batch.buffer.byteLength === BLOB_BATCH) this.free.push(batch.length === BLOB_BATCH ? batch : Buffer.from(batch.buffer, 0, BLOB_BATCH));
    if (this.complete && this.taken === 0) spares.give(this.free.splice(0));
    else this.unpause();
  }

  private unpause(): void {
    if (!this.paused || this.ready.length + this.taken >= BATCHES_AHEAD) return;
    this.paused = false;
    this.connection.resume();
  }

  private deliver(): void {
    if (this.mode === 'batches') {
      this.wakeTaker?.();
      this.wakeTaker = undefined;
    } else if (this.mode === 'stream') {
      let open = true;
      while (open && this.ready.length > 0) open = this.push(this.ready.shift());
      if (this.ready.length === 0 && this.complete) this.push(null);
      else if (this.ready.length === 0 && this.failure) this.destroy(this.failure);
    }
  }

  override _read(): void {
    if (this.mode === 'batches') return;
    this.mode = 'stream';
    this.deliver();
    this.unpause();
  }

  /** the connection failed before the last byte */
  fail(err: Error): void {
    if (this.complete) return;
    // told when it is read (a body not read yet has no listener for an error)
    this.failure = new Error(`its body ended after ${this.length - this.left} of the ${this.length} bytes it declared (${err.message})`);
    this.deliver();
  }

  override _destroy(err: Error | null, callback: (err?: Error | null) => void): void {
    if (!this.complete) this.connection.close();
    callback(err);
  }
}
