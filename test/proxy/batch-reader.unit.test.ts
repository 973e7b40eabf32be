/**
 * The stream a client of a blob being fetched reads (src/proxy/batch-reader.ts): piped into a
 * response, a batch of the upstream's chunks leaves in one corked writev however small the socket's
 * high-water mark; read any other way it is an ordinary Readable of the same chunks.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { BatchReader } from '../../src/proxy/batch-reader.js';

const KiB = 1024;

/** a destination like a socket: 16 KiB high-water mark, one call per write or writev, each completing a tick later */
class Socketlike extends Writable {
  calls: number[] = [];
  received: Buffer[] = [];
  constructor() {
    super({ highWaterMark: 16 * KiB });
  }
  override _write(chunk: Buffer, _encoding: string, callback: () => void): void {
    this.calls.push(1);
    this.received.push(chunk);
    setImmediate(callback);
  }
  override _writev(chunks: { chunk: Buffer }[], callback: () => void): void {
    this.calls.push(chunks.length);
    for (const { chunk } of chunks) this.received.push(chunk);
    setImmediate(callback);
  }
}

const batch = () => Array.from({ length: 16 }, () => randomBytes(64 * KiB));

describe('BatchReader', () => {
  it('piped: each batch leaves in one write of all its chunks, the stream ends and ends its destination', async () => {
    const reader = new BatchReader();
    const dest = new Socketlike();
    reader.pipe(dest);
    const batches = [batch(), batch(), batch()];
    const ended = once(reader, 'end');
    const finished = once(dest, 'finish');
    await reader.send(batches[0]);
    await reader.send(batches[1]);
    await reader.finish(batches[2]);
    await Promise.all([ended, finished]);
    assert.deepEqual(dest.calls, [16, 16, 16]);
    assert.ok(Buffer.concat(dest.received).equals(Buffer.concat(batches.flat())));
  });

  it('piped: a send resolves once its batch was written, not before', async () => {
    const reader = new BatchReader();
    const dest = new Socketlike();
    reader.pipe(dest);
    let written = false;
    const sent = reader.send(batch()).then(() => (written = dest.received.length === 16));
    await sent;
    assert.ok(written);
  });

  it('read with for await: the same chunks in order, with back-pressure', async () => {
    const reader = new BatchReader();
    const batches = [batch(), batch()];
    const feeding = (async () => {
      await reader.send(batches[0]);
      await reader.finish(batches[1]);
    })();
    const got: Buffer[] = [];
    for await (const chunk of reader) got.push(chunk as Buffer);
    await feeding;
    assert.ok(Buffer.concat(got).equals(Buffer.concat(batches.flat())));
  });

  it('a reader destroyed mid-batch lets the sender go on (the client left)', async () => {
    const reader = new BatchReader();
    const dest = new Writable({ highWaterMark: 16 * KiB, write: () => undefined }); // never calls back
    reader.pipe(dest);
    const sent = reader.send(batch());
    reader.destroy();
    await sent;
    await reader.send(batch()); // a send after the end resolves at once
  });
});
