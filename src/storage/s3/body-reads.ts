/**
 * Object bodies streamed from the store (a blob served through berth, storage.redirect.disable or
 * no redirect possible) over connections of berth's own, whose socket reads land in buffers berth
 * reuses. Through undici every socket read of the store's answer is a fresh 64 KiB Buffer: a
 * 128 MiB pull made 2,000 of them, and allocating and collecting them was most of berth's CPU for
 * the pull (docs/decisions.md, "S3 streamed reads").
 *
 * Only the common answer is read here: 200 or 206 with a Content-Length. Another answer is
 * reported by its status, unread; a connection that fails before an answer's head (a kept one the
 * store closed while idle, say) by `undefined`. The caller (signed-http.ts) then asks the general
 * client, which has the retries and the error bodies.
 *
 * Piped into a destination (fastify pipes a reply stream into the response), a body reads into
 * buffers of its own, each handed out again only after the destination's write callback said its
 * bytes left (as FileReadStream does for files). Read any other way (for await, 'data'), each read
 * is copied into a new Buffer for the reader to keep.
 */
import net from 'node:net';
import { Readable, type Writable } from 'node:stream';
import tls from 'node:tls';
import { shortLivedBytes } from '../short-lived-bytes.js';

export interface BodyReadsOptions {
  rejectUnauthorized: boolean;
  /** a store silent this long while berth waits for bytes fails the read (the general client's 120 s) */
  silenceMs?: number;
  /** an idle connection is closed after this long */
  keepAliveMs?: number;
}

/** what one body read buffer holds: a socket read of Node's own size */
const READ_BUFFER = 64 * 1024;
/** piped: writes in flight at which reading pauses until one is done (a client slower than the store) */
const WRITES_IN_FLIGHT = 2;
/** where the answer's head is read (a connection's own; its body bytes are copied out) */
const HEAD_BUFFER = 16 * 1024;
/** the most an answer's head may take */
const MAX_HEAD = 64 * 1024;
/** idle connections kept for the next read */
const MAX_IDLE = 32;
const CONNECT_TIMEOUT_MS = 10_000;

export class BodyReads {
  private readonly idle: StoreConnection[] = [];
  private closed = false;

  constructor(
    private readonly origin: URL,
    private readonly options: BodyReadsOptions,
  ) {}

  /**
   * GET `target` (path and query) with `headers` (signed; host included): the body of a 200 or 206
   * answer (as `expect` says) that has a Content-Length; the status of another answer (its body
   * unread); undefined when no answer came.
   */
  async open(target: string, headers: Record<string, string>, expect: 200 | 206): Promise<StoreAnswer | undefined> {
    if (this.closed) return undefined;
    const connection = this.idle.pop() ?? (await this.connect().catch(() => undefined));
    if (!connection) return undefined;
    connection.leaveIdle();
    return connection.get(target, headers, expect);
  }

  close(): Promise<void> {
    this.closed = true;
    for (const connection of this.idle.splice(0)) connection.destroy();
    return Promise.resolve();
  }

  private connect(): Promise<StoreConnection> {
    const host = this.origin.hostname.replace(/^\[|\]$/g, '');
    const https = this.origin.protocol === 'https:';
    const port = Number(this.origin.port || (https ? 443 : 80));
    return new Promise((resolve, reject) => {
      let connection: StoreConnection | undefined;
      const onread = { buffer: () => connection?.nextBuffer() ?? Buffer.allocUnsafe(HEAD_BUFFER), callback: (n: number, buffer: Buffer) => connection?.onRead(buffer.subarray(0, n)) ?? false };
      const socket = https
        ? tls.connect({ host, port, servername: net.isIP(host) ? undefined : host, rejectUnauthorized: this.options.rejectUnauthorized, onread } as tls.ConnectionOptions)
        : net.connect({ host, port, onread });
      const ready = https ? 'secureConnect' : 'connect';
      socket.setNoDelay(true);
      const tooSlow = () => socket.destroy(new Error(`no connection to the store within ${CONNECT_TIMEOUT_MS / 1000}s`));
      socket.setTimeout(CONNECT_TIMEOUT_MS, tooSlow);
      const failed = (err: Error) => reject(err);
      socket.once('error', failed);
      socket.once(ready, () => {
        socket.off('error', failed);
        socket.off('timeout', tooSlow);
        connection = new StoreConnection(socket, this.options.silenceMs ?? 120_000, (done) => this.release(done));
        resolve(connection);
      });
    });
  }

  /** a connection whose answer was read whole: kept for the next read while there is room */
  private release(connection: StoreConnection): void {
    if (this.closed || this.idle.length >= MAX_IDLE) return connection.destroy();
    this.idle.push(connection);
    connection.enterIdle(this.options.keepAliveMs ?? 30_000, () => {
      const at = this.idle.indexOf(connection);
      if (at >= 0) this.idle.splice(at, 1);
    });
  }
}

/** what open() found: the body to read, or the status of an answer it does not read */
export type StoreAnswer = { body: Readable } | { status: number };

/** the answer being waited for: its head is gathered here */
interface Waiting {
  expect: 200 | 206;
  head: Buffer[];
  headBytes: number;
  resolve(answer: StoreAnswer | undefined): void;
}

/** one connection to the store, one request at a time */
class StoreConnection {
  private readonly scratch = Buffer.allocUnsafe(HEAD_BUFFER);
  private waiting: Waiting | undefined;
  private body: StoreBody | undefined;
  /** body bytes still to come */
  private remaining = 0;
  /** the answer allows the connection's reuse */
  private keepAlive = false;
  private idleTimer: NodeJS.Timeout | undefined;
  private onIdleEnd: (() => void) | undefined;

  constructor(
    private readonly socket: net.Socket,
    private readonly silenceMs: number,
    private readonly release: (connection: StoreConnection) => void,
  ) {
    socket.setTimeout(0);
    socket.on('timeout', () => this.fail(new Error(`the store sent nothing for ${silenceMs / 1000}s`)));
    socket.on('error', (err) => this.fail(err));
    socket.on('close', () => this.fail(new Error('the store closed the connection')));
  }

  get(target: string, headers: Record<string, string>, expect: 200 | 206): Promise<StoreAnswer | undefined> {
    if (this.socket.destroyed) return Promise.resolve(undefined);
    return new Promise((resolve) => {
      this.waiting = { expect, head: [], headBytes: 0, resolve };
      let request = `GET ${target} HTTP/1.1\r\n`;
      for (const [name, value] of Object.entries(headers)) request += `${name}: ${value}\r\n`;
      this.socket.write(`${request}\r\n`, 'latin1');
      this.socket.setTimeout(this.silenceMs);
    });
  }

  /** the buffer the next socket read fills */
  nextBuffer(): Buffer {
    return this.body?.nextBuffer() ?? this.scratch;
  }

  /** a socket read; false pauses reading (the body's reader resumes it) */
  onRead(data: Buffer): boolean {
    if (this.waiting) return this.onHead(data);
    if (this.body) return this.onBody(data);
    // bytes nobody asked for: the connection is out of step with the store
    this.destroy();
    return false;
  }

  private onHead(data: Buffer): boolean {
    const waiting = this.waiting!;
    waiting.head.push(Buffer.from(data)); // the read buffer is reused
    waiting.headBytes += data.length;
    const bytes = waiting.head.length === 1 ? waiting.head[0] : Buffer.concat(waiting.head);
    waiting.head = [bytes];
    const end = bytes.indexOf('\r\n\r\n', Math.max(0, bytes.length - data.length - 3), 'latin1');
    if (end < 0) {
      if (waiting.headBytes <= MAX_HEAD) return true;
      return this.unusable(waiting);
    }
    const head = parseHead(bytes.toString('latin1', 0, end));
    if (!head) return this.unusable(waiting);
    if (head.status !== waiting.expect || head.contentLength === undefined || head.chunked) return this.unusable(waiting, head.status);
    this.waiting = undefined;
    this.keepAlive = head.keepAlive;
    this.remaining = head.contentLength;
    const body = new StoreBody(this, head.contentLength);
    const rest = bytes.subarray(end + 4);
    if (rest.length > this.remaining) return this.unusable(waiting);
    if (this.remaining === 0) {
      body.finish();
      this.answered();
    } else {
      this.body = body;
      this.remaining -= rest.length;
      if (rest.length > 0) body.first(rest);
      if (this.remaining === 0) this.bodyRead();
    }
    waiting.resolve({ body });
    // the reader decides when reading starts (piped or read), unless nothing is left to read
    return this.body === undefined;
  }

  /** an answer this reader does not read (its status, when it has one): the connection goes */
  private unusable(waiting: Waiting, status?: number): false {
    this.waiting = undefined;
    this.destroy();
    waiting.resolve(status === undefined ? undefined : { status });
    return false;
  }

  private onBody(data: Buffer): boolean {
    if (data.length > this.remaining) {
      this.fail(new Error(`the store sent more than the ${this.body!.length} bytes it announced`));
      return false;
    }
    this.remaining -= data.length;
    const more = this.body!.deliver(data);
    if (this.remaining === 0) {
      this.bodyRead();
      return true;
    }
    if (!more) this.socket.setTimeout(0); // the reader is slow, not the store
    return more;
  }

  /** the body's last byte arrived */
  private bodyRead(): void {
    const body = this.body!;
    this.body = undefined;
    body.finish();
    this.answered();
  }

  private answered(): void {
    this.socket.setTimeout(0);
    if (this.keepAlive) this.release(this);
    else this.destroy();
  }

  /** the body's reader wants more */
  resume(): void {
    if (this.socket.destroyed) return;
    this.socket.setTimeout(this.silenceMs);
    this.socket.resume();
  }

  enterIdle(keepAliveMs: number, onEnd: () => void): void {
    this.onIdleEnd = onEnd;
    this.idleTimer = setTimeout(() => this.destroy(), keepAliveMs);
    this.idleTimer.unref();
  }

  leaveIdle(): void {
    clearTimeout(this.idleTimer);
    this.onIdleEnd = undefined;
  }

  /** a body abandoned by its reader: its remaining bytes are not wanted, so the connection goes */
  abandon(body: StoreBody): void {
    if (this.body === body) this.destroy();
  }

  private fail(err: Error): void {
    const { waiting, body } = this;
    this.waiting = this.body = undefined;
    this.destroy();
    waiting?.resolve(undefined);
    body?.destroy(err);
  }

  destroy(): void {
    clearTimeout(this.idleTimer);
    this.onIdleEnd?.();
    this.onIdleEnd = undefined;
    if (!this.socket.destroyed) this.socket.destroy();
  }
}

interface Head {
  status: number;
  contentLength: number | undefined;
  chunked: boolean;
  keepAlive: boolean;
}

/** the status line and the headers this reader needs; undefined when it is not HTTP/1.x */
function parseHead(text: string): Head | undefined {
  const lines = text.split('\r\n');
  const status = /^HTTP\/1\.([01]) (\d{3})(?: |$)/.exec(lines[0]);
  if (!status) return undefined;
  let contentLength: number | undefined;
  let chunked = false;
  let connection = '';
  for (const line of lines.slice(1)) {
    const colon = line.indexOf(':');
    if (colon <= 0) return undefined;
    const name = line.slice(0, colon).trim().toLowerCase();
    const value = line.slice(colon + 1).trim();
    if (name === 'content-length') {
      if (!/^\d+$/.test(value) || (contentLength !== undefined && contentLength !== Number(value))) return undefined;
      contentLength = Number(value);
    } else if (name === 'transfer-encoding') chunked = true;
    else if (name === 'connection') connection = value.toLowerCase();
  }
  const keepAlive = status[1] === '1' ? connection !== 'close' : connection === 'keep-alive';
  return { status: Number(status[2]), contentLength, chunked, keepAlive };
}

/**
 * An answer's body. Reading starts when the reader shows how it reads: pipe() (two reused
 * buffers) or _read() (a copy per socket read).
 */
class StoreBody extends Readable {
  private mode: 'waiting' | 'piped' | 'read' = 'waiting';
  /** body bytes that came with the head (a copy), delivered once the mode is known */
  private early: Buffer | undefined;
  private dest: Writable | undefined;
  private endDest = true;
  /** piped: the read buffers, and whether a write of each is in flight */
  private readonly buffers: Buffer[] = [];
  private readonly writing: boolean[] = [];
  private paused = true;
  private complete = false;
  private ended = false;
  private writes = 0;

  constructor(
    private readonly connection: StoreConnection,
    readonly length: number,
  ) {
    super({ highWaterMark: READ_BUFFER });
  }

  first(bytes: Buffer): void {
    this.early = bytes;
  }

  /**
   * piped: the buffer the next socket read fills, one without a write in flight (a new one when
   * there is none); otherwise undefined: the connection's own, whose bytes are copied.
   *
   * Never a buffer still being written, even while reading is paused: over TLS, Node goes on
   * decrypting the records of the socket read it has (16 KiB each) into the buffer it was handed
   * after the pause. So a body has three buffers over plain HTTP, a few more over TLS.
   */
  nextBuffer(): Buffer | undefined {
    if (this.mode !== 'piped') return undefined;
    let free = this.writing.indexOf(false);
    if (free < 0) {
      free = this.buffers.push(Buffer.allocUnsafeSlow(Math.min(READ_BUFFER, this.length))) - 1;
      this.writing.push(false);
    }
    return this.buffers[free];
  }

  override pipe<T extends NodeJS.WritableStream>(dest: T, options?: { end?: boolean }): T {
    if (this.mode !== 'waiting' || this.readableFlowing !== null) return super.pipe(dest, options);
    this.mode = 'piped';
    this.dest = dest as unknown as Writable;
    this.endDest = options?.end !== false;
    const early = this.early;
    this.early = undefined;
    if (early) this.write(early, -1);
    if (this.complete) this.finishPiped();
    else this.wake();
    return dest;
  }

  override _read(): void {
    if (this.mode === 'waiting') {
      this.mode = 'read';
      const early = this.early;
      this.early = undefined;
      if (early && !this.push(early)) return;
      if (this.complete) return void this.push(null);
    }
    if (this.mode === 'read') this.wake();
  }

  /** a socket read of body bytes; false when reading must pause */
  deliver(data: Buffer): boolean {
    if (this.mode === 'read') {
      shortLivedBytes(data.length);
      const copy = Buffer.allocUnsafe(data.length);
      data.copy(copy);
      this.paused = !this.push(copy);
      return !this.paused;
    }
    // piped: a read into one of the body's buffers keeps it taken until its write is done; a read
    // into the connection's buffer (the first after the head) is copied, as that buffer is reused
    const buffer = this.buffers.findIndex((b) => b.buffer === data.buffer);
    this.write(buffer >= 0 ? data : Buffer.from(data), buffer);
    this.paused = this.writes >= WRITES_IN_FLIGHT;
    return !this.paused;
  }

  /** writes a chunk; `buffer` is the read buffer it lies in (-1: a copy of its own) */
  private write(chunk: Buffer, buffer: number): void {
    if (buffer >= 0) this.writing[buffer] = true;
    this.writes++;
    this.dest!.write(chunk, (err) => {
      this.writes--;
      if (buffer >= 0) this.writing[buffer] = false;
      if (err) return void this.destroy(err);
      if (this.complete) this.finishPiped();
      else if (this.writes < WRITES_IN_FLIGHT) this.wake();
    });
  }

  /** the last byte arrived */
  finish(): void {
    this.complete = true;
    if (this.mode === 'read') this.push(null);
    else if (this.mode === 'piped') this.finishPiped();
  }

  private finishPiped(): void {
    if (this.writes > 0 || this.ended || this.destroyed) return;
    this.ended = true;
    if (this.endDest) this.dest!.end();
    // end this stream too, so whoever waits for it (fastify's end-of-stream check) sees it finish
    this.push(null);
    this.resume();
  }

  private wake(): void {
    if (!this.paused || this.complete || this.destroyed) return;
    this.paused = false;
    this.connection.resume();
  }

  override _destroy(err: Error | null, callback: (err?: Error | null) => void): void {
    if (!this.complete) this.connection.abandon(this);
    callback(err);
  }
}
