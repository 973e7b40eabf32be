/**
 * A cold fetch's body read into buffers the fetch reuses (src/proxy/blob-get.ts): a client the
 * body is piped to gets it from a few 1 MiB buffers, not from one fresh Buffer per socket read; a
 * client that reads the stream itself keeps correct bytes (copies); an upstream that frames its
 * body otherwise (chunked) is still read; a body cut short is not stored.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable, type Readable } from 'node:stream';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { BlobFetches } from '../../src/proxy/blob-fetch.js';
import { getBlob } from '../../src/proxy/blob-get.js';
import { ProxyStats } from '../../src/proxy/stats.js';
import { Upstream } from '../../src/proxy/upstream.js';
import { BlobStore } from '../../src/registry/blobs.js';
import type { Digest } from '../../src/registry/digest.js';
import { UploadSessions } from '../../src/registry/uploads.js';
import { InMemoryDriver } from '../../src/storage/inmemory.js';

const MiB = 1024 * 1024;

/** a client socket: records which ArrayBuffers the written bytes lie in */
class Recorder extends Writable {
  readonly received: Buffer[] = [];
  readonly memory = new Set<ArrayBufferLike>();
  override _writev(chunks: { chunk: Buffer }[], callback: () => void): void {
    for (const { chunk } of chunks) this.take(chunk);
    setImmediate(callback);
  }
  override _write(chunk: Buffer, _encoding: string, callback: () => void): void {
    this.take(chunk);
    setImmediate(callback);
  }
  private take(chunk: Buffer): void {
    this.memory.add(chunk.buffer);
    this.received.push(Buffer.from(chunk)); // what the client got at the time of the write
  }
}

describe('a cold fetch read into reused buffers', () => {
  const blobs = new Map<string, Buffer>();
  let chunked = false;
  let cutAfter: number | undefined;
  let server: Server;
  let fetches: BlobFetches;
  let store: BlobStore;
  let origin: string;
  let requests = 0;

  const add = (size: number): { digest: Digest; data: Buffer } => {
    const data = randomBytes(size);
    const digest = `sha256:${createHash('sha256').update(data).digest('hex')}` as Digest;
    blobs.set(digest, data);
    return { digest, data };
  };

  before(async () => {
    server = createServer((req, res) => {
      requests++;
      const data = blobs.get(req.url!.split('/').pop()!);
      if (!data) return void res.writeHead(404).end();
      if (chunked) {
        res.writeHead(200); // chunked: no Content-Length
        for (let at = 0; at < data.length; at += 100_000) res.write(data.subarray(at, at + 100_000));
        return void res.end();
      }
      res.writeHead(200, { 'content-length': data.length });
      if (cutAfter !== undefined) {
        res.write(data.subarray(0, cutAfter), () => res.destroy());
        return;
      }
      res.end(data);
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const logger = pino({ level: 'silent' });
    origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const upstream = new Upstream({ remoteurl: origin, checkTimeoutMs: 10_000, fetchTimeoutMs: 10_000 }, logger);
    const driver = new InMemoryDriver();
    store = new BlobStore(driver);
    fetches = new BlobFetches(upstream, new UploadSessions(driver, store), store, logger, { fetchTimeoutMs: 10_000, idleTimeoutMs: 10_000 }, new ProxyStats());
  });
  after(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  it('pipes a 32 MiB body to a client from at most 5 buffers of the fetch, and a client reading it itself keeps the right bytes', async () => {
    const { digest, data } = add(32 * MiB + 12345);
    const [piped, read] = await Promise.all([fetches.open('lib/a', digest), fetches.open('lib/a', digest)]);
    const recorder = new Recorder();
    const written = new Promise((resolve) => recorder.on('finish', resolve));
    piped.pipe(recorder);
    const kept: Buffer[] = [];
    for await (const chunk of read as AsyncIterable<Buffer>) kept.push(chunk);
    await written;
    assert.ok(Buffer.concat(recorder.received).equals(data), 'the piped client got the blob');
    assert.ok(Buffer.concat(kept).equals(data), 'the reading client kept the blob');
    assert.ok(recorder.memory.size <= 5, `the piped client's bytes came from ${recorder.memory.size} buffers`);
    assert.equal(await store.storedSize(digest), data.length);
  });

  it('reads a chunked body (no Content-Length) through the general client, checked against the digest', async () => {
    const { digest, data } = add(3 * MiB + 7);
    fetches.declared(digest, data.length);
    chunked = true;
    try {
      const body = await fetches.open('lib/b', digest);
      const got: Buffer[] = [];
      for await (const chunk of body as AsyncIterable<Buffer>) got.push(chunk);
      assert.ok(Buffer.concat(got).equals(data));
    } finally {
      chunked = false;
    }
    assert.equal(await store.storedSize(digest), data.length);
  });

  it('does not complete or store a body the upstream cuts short', async () => {
    const { digest } = add(4 * MiB);
    cutAfter = 2 * MiB + 100;
    try {
      const body: Readable = await fetches.open('lib/c', digest);
      await assert.rejects(
        (async () => {
          for await (const chunk of body as AsyncIterable<Buffer>) void chunk;
        })(),
        /ended after \d+ of the 4194304 bytes|fetching/,
      );
    } finally {
      cutAfter = undefined;
    }
    assert.equal(await store.storedSize(digest), undefined);
  });

  it('fetches an empty blob and blobs around the batch size, whole and stored', async () => {
    for (const size of [0, 1, MiB - 1, MiB, MiB + 1, 2 * MiB]) {
      const { digest, data } = add(size);
      const body = await fetches.open(`lib/s${size}`, digest);
      const got: Buffer[] = [];
      for await (const chunk of body as AsyncIterable<Buffer>) got.push(chunk);
      assert.ok(Buffer.concat(got).equals(data), `${size} bytes`);
      assert.equal(await store.storedSize(digest), size);
    }
  });

  it('sends no request whose header value holds a line break (a token service cannot add headers)', async () => {
    const before = requests;
    await assert.rejects(getBlob(new URL(`${origin}/v2/lib/d/blobs/sha256:00`), { authorization: 'Bearer a\r\nx-evil: 1' }, new AbortController().signal), /line break/);
    assert.equal(requests, before);
  });
});
