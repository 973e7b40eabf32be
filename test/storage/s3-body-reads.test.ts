/**
 * The S3 driver's streamed reads over berth's own connections (src/storage/s3/body-reads.ts),
 * against a local HTTP(S) server playing the store: the bytes arrive whole and in order however
 * slowly the reader takes them (the reused read buffers are never overwritten under a pending
 * write), connections are kept and reused, and every answer it does not read (another status, a
 * chunked body, a store that closes or falls silent) is reported, not served.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { BodyReads, type StoreAnswer } from '../../src/storage/s3/body-reads.js';
import { issueCert, makeCA } from '../helpers/auth.js';
import { needTool } from '../helpers/tools.js';

/** the bytes 0..250: byte i of every object is i mod 251, reproducible and different at every offset within 251 */
const PERIOD = Buffer.from(Array.from({ length: 251 }, (_, i) => i));
/** bytes [start, start + length) of an object (a repeated fill: a 20 MB object is made at once) */
const content = (start: number, length: number) => {
  const from = start % PERIOD.length;
  return Buffer.alloc(length, Buffer.concat([PERIOD.subarray(from), PERIOD.subarray(0, from)]));
};

interface Store {
  origin: URL;
  connections: number;
  /** sockets the store still has open */
  open: Set<Socket>;
  close(): Promise<void>;
}

/**
 * GET /<size>: `size` bytes of content(), or the range asked for (206). Query: status=N answers N
 * with a short body; chunked=1 sends the body chunked; cut=N closes the connection after N body
 * bytes; stall=1 sends the head and nothing more; close=1 answers Connection: close.
 */
function handler(req: http.IncomingMessage, res: http.ServerResponse): void {
  const url = new URL(req.url!, 'http://store');
  const size = Number(url.pathname.slice(1));
  const q = url.searchParams;
  if (q.has('status')) {
    res.writeHead(Number(q.get('status')), { 'content-type': 'application/xml' }).end('<Error><Code>NoSuchKey</Code></Error>');
    return;
  }
  const range = /^bytes=(\d+)-(\d*)$/.exec(req.headers.range ?? '');
  const start = range ? Number(range[1]) : 0;
  const end = range && range[2] ? Number(range[2]) + 1 : size;
  const body = content(start, end - start);
  const headers: Record<string, string | number> = q.has('chunked') ? { 'transfer-encoding': 'chunked' } : { 'content-length': body.length };
  if (range) headers['content-range'] = `bytes ${start}-${end - 1}/${size}`;
  if (q.has('close')) headers.connection = 'close';
  res.writeHead(range ? 206 : 200, headers);
  if (q.has('stall')) return void res.flushHeaders();
  if (q.has('cut')) {
    res.write(body.subarray(0, Number(q.get('cut'))), () => res.socket?.destroy());
    return;
  }
  // in pieces, so the reader sees many socket reads
  let at = 0;
  const next = () => {
    while (at < body.length) {
      const piece = body.subarray(at, at + 100_000);
      at += piece.length;
      if (!res.write(piece)) return void res.once('drain', next);
    }
    res.end();
  };
  next();
}

async function startStore(tlsFiles?: { key: string; cert: string }): Promise<Store> {
  const server = tlsFiles ? https.createServer(tlsFiles, handler) : http.createServer(handler);
  const store: Store = {
    origin: new URL('http://127.0.0.1'),
    connections: 0,
    open: new Set(),
    close: async () => {
      for (const socket of store.open) socket.destroy();
      server.close();
      await once(server, 'close');
    },
  };
  server.on(tlsFiles ? 'secureConnection' : 'connection', (socket: Socket) => {
    store.connections++;
    store.open.add(socket);
    socket.on('close', () => store.open.delete(socket));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  store.origin = new URL(`${tlsFiles ? 'https' : 'http'}://127.0.0.1:${(server.address() as AddressInfo).port}`);
  return store;
}

const headersFor = (store: Store, range?: string) => ({ host: store.origin.host, ...(range ? { range } : {}) });

function bodyOf(answer: StoreAnswer | undefined): Readable {
  if (answer && 'body' in answer) return answer.body;
  assert.fail(`expected a body, got ${JSON.stringify(answer)}`);
}

/**
 * A destination that takes each chunk's bytes only when it calls the write back, up to `delayMs`
 * later: had the reader reused a buffer before that, the bytes taken would differ from those sent.
 */
function slowDestination(delayMs: number): Writable & { digest(): string; bytes: number } {
  const hash = createHash('sha256');
  let bytes = 0;
  const dest = new Writable({
    highWaterMark: 1,
    write(chunk: Buffer, _encoding, done) {
      setTimeout(() => {
        hash.update(chunk);
        bytes += chunk.length;
        done();
      }, Math.random() * delayMs);
    },
  });
  return Object.defineProperties(dest, { digest: { value: () => hash.digest('hex') }, bytes: { get: () => bytes } }) as Writable & { digest(): string; bytes: number };
}

const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');

describe('S3 streamed reads over berth\'s own connections (body-reads)', () => {
  let store: Store;
  let reads: BodyReads;
  before(async () => {
    store = await startStore();
    reads = new BodyReads(store.origin, { rejectUnauthorized: true, silenceMs: 1_000 });
  });
  after(async () => {
    await reads.close();
    await store.close();
  });

  it('piped into a slow destination, delivers every byte in order (no read buffer reused under a pending write)', async () => {
    const size = 3 * 1024 * 1024 + 17;
    const body = bodyOf(await reads.open(`/${size}`, headersFor(store), 200));
    const dest = slowDestination(3);
    body.pipe(dest);
    await once(dest, 'finish');
    assert.equal(dest.bytes, size);
    assert.equal(dest.digest(), sha256(content(0, size)));
  });

  it('read with for await, hands out copies the reader may keep (a range: 206)', async () => {
    const chunks: Buffer[] = [];
    for await (const chunk of bodyOf(await reads.open('/1000000', headersFor(store, 'bytes=1000-600999'), 206))) {
      chunks.push(chunk as Buffer);
      await sleep(0);
    }
    assert.deepEqual(Buffer.concat(chunks), content(1000, 600_000));
  });

  it('keeps the connection for the next read when the answer allows it, and not when it says close', async () => {
    const own = new BodyReads(store.origin, { rejectUnauthorized: true });
    try {
      const before = store.connections;
      for (let i = 0; i < 3; i++) await pipeline(bodyOf(await own.open('/70000', headersFor(store), 200)), slowDestination(0));
      assert.equal(store.connections - before, 1, 'three reads, one connection');
      await pipeline(bodyOf(await own.open('/10?close=1', headersFor(store), 200)), slowDestination(0));
      await pipeline(bodyOf(await own.open('/10', headersFor(store), 200)), slowDestination(0));
      assert.equal(store.connections - before, 2, 'a new connection after Connection: close');
    } finally {
      await own.close();
    }
  });

  it('an empty object: a body that ends at once', async () => {
    const body = bodyOf(await reads.open('/0', headersFor(store), 200));
    const dest = slowDestination(0);
    body.pipe(dest);
    await once(dest, 'finish');
    assert.equal(dest.bytes, 0);
  });

  it('reports the status of another answer without reading it (404, 503, 200 where 206 was asked)', async () => {
    assert.deepEqual(await reads.open('/10?status=404', headersFor(store), 200), { status: 404 });
    assert.deepEqual(await reads.open('/10?status=503', headersFor(store), 200), { status: 503 });
    assert.deepEqual(await reads.open('/10', headersFor(store), 206), { status: 200 });
  });

  it('does not read a chunked body: reported by its status, for the general client to read', async () => {
    assert.deepEqual(await reads.open('/10?chunked=1', headersFor(store), 200), { status: 200 });
  });

  it('a store that closes mid-body fails the body, which never ends as if complete', async () => {
    const body = bodyOf(await reads.open('/500000?cut=200000', headersFor(store), 200));
    await assert.rejects(pipeline(body, slowDestination(0)), /closed the connection/);
  });

  it('a store that falls silent fails the body after silenceMs', async () => {
    const body = bodyOf(await reads.open('/500000?stall=1', headersFor(store), 200));
    await assert.rejects(pipeline(body, slowDestination(0)), /sent nothing for 1s/);
  });

  it('a reader that pauses longer than silenceMs is not failed: the store is not the one waiting', async () => {
    const size = 8_000_000;
    // a shorter silence than the file's reader, so that the pause outlasting it stays under a second
    const quick = new BodyReads(store.origin, { rejectUnauthorized: true, silenceMs: 500 });
    try {
      const body = bodyOf(await quick.open(`/${size}`, headersFor(store), 200));
      const ended = once(body, 'end');
      const chunks: Buffer[] = [];
      body.on('data', (chunk: Buffer) => {
        chunks.push(chunk);
        if (chunks.length === 1) body.pause(); // with most of the body still in the store's socket
      });
      await sleep(800);
      assert.ok(chunks.length < 10, `paused after the first chunk (${chunks.length} so far)`);
      body.resume();
      await ended;
      assert.equal(sha256(Buffer.concat(chunks)), sha256(content(0, size)));
    } finally {
      await quick.close();
    }
  });

  it('a body its reader abandons closes its connection (the rest of the body is not wanted)', async () => {
    const body = bodyOf(await reads.open('/20000000', headersFor(store), 200));
    const open = store.open.size;
    await new Promise<void>((resolve) => body.once('data', () => resolve()));
    body.destroy();
    for (let i = 0; i < 100 && store.open.size >= open; i++) await sleep(10);
    assert.ok(store.open.size < open, 'the store saw the connection close');
  });

  it('an idle connection the store closed is not used again: the read goes on a new one', async () => {
    await pipeline(bodyOf(await reads.open('/10', headersFor(store), 200)), slowDestination(0));
    for (const socket of store.open) socket.destroy();
    await sleep(50);
    const body = bodyOf(await reads.open('/10', headersFor(store), 200));
    const chunks: Buffer[] = [];
    for await (const chunk of body) chunks.push(chunk as Buffer);
    assert.deepEqual(Buffer.concat(chunks), content(0, 10));
  });
});

describe('S3 streamed reads over TLS (body-reads)', needTool('openssl', 'a test certificate'), () => {
  let dir: string;
  let store: Store;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'berth-body-reads-'));
    const ca = await makeCA(dir, 'ca');
    const cert = await issueCert(dir, ca, 'store');
    store = await startStore({ key: cert.keyPem, cert: cert.certPem });
  });
  after(async () => {
    await store?.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('reads over TLS with skipverify, and refuses a certificate it cannot verify without it', async () => {
    const trusting = new BodyReads(store.origin, { rejectUnauthorized: false });
    const verifying = new BodyReads(store.origin, { rejectUnauthorized: true });
    try {
      const dest = slowDestination(3);
      bodyOf(await trusting.open('/3000000', headersFor(store), 200)).pipe(dest);
      await once(dest, 'finish');
      assert.equal(dest.digest(), sha256(content(0, 3_000_000)));
      assert.equal(await verifying.open('/10', headersFor(store), 200), undefined);
    } finally {
      await trusting.close();
      await verifying.close();
    }
  });
});
