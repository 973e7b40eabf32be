/**
 * Many small files (links, berth.json) read whole with their modification time by synchronous fs
 * calls on worker threads: the filesystem driver's readSmallFiles. A file read through libuv's
 * pool is four round trips (open, fstat, read, close), each a hand-off to a pool thread and back
 * with a promise; the index rebuild reads a few per tag and per manifest, and those round trips
 * were most of its CPU (docs/performance.md, "Index rebuild"). On a worker the same syscalls run
 * back to back, one message per batch, and the event loop is never blocked by them (a slow disk
 * stalls the worker, not requests). Workers start on first use and are unref'd.
 */
import { Worker } from 'node:worker_threads';
import type { SmallFile } from './driver.js';

/** worker threads: the syscalls block their thread, so two keep a disk busy while one waits */
const WORKERS = 2;
/** idle this long, the workers end (a few MiB each; the reconciler's next pass starts them again) */
const IDLE_MS = 10_000;

/**
 * the worker: plain JavaScript (no loader needed). Per message, each path's content (concatenated
 * into one transferred buffer) and mtime, or a missing mark, or the error's text.
 */
const WORKER = `
const { parentPort } = require('node:worker_threads');
const { openSync, fstatSync, readSync, closeSync } = require('node:fs');
const MISSING = new Set(['ENOENT', 'ENOTDIR', 'EISDIR']);
parentPort.on('message', ({ id, paths }) => {
  const parts = [];
  const lengths = new Float64Array(paths.length);
  const times = new Float64Array(paths.length);
  let total = 0;
  let error;
  for (let i = 0; i < paths.length && error === undefined; i++) {
    let fd;
    try {
      fd = openSync(paths[i], 'r');
      const st = fstatSync(fd);
      if (st.isDirectory()) { lengths[i] = -1; continue; }
      const data = Buffer.allocUnsafe(st.size);
      let n = 0;
      while (n < st.size) { const got = readSync(fd, data, n, st.size - n, n); if (got === 0) break; n += got; }
      parts.push(n === st.size ? data : data.subarray(0, n));
      lengths[i] = n;
      times[i] = st.mtime.getTime(); // whole ms, as the driver's stat() gives them
      total += n;
    } catch (err) {
      if (MISSING.has(err && err.code)) lengths[i] = -1;
      else error = { index: i, message: String(err && err.message), code: err && err.code };
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
  }
  const all = Buffer.concat(parts, total);
  const bytes = all.buffer.slice(all.byteOffset, all.byteOffset + all.length);
  parentPort.postMessage({ id, bytes, lengths, times, error }, [bytes, lengths.buffer, times.buffer]);
});
`;

interface Reply {
  id: number;
  bytes: ArrayBuffer;
  lengths: Float64Array;
  times: Float64Array;
  error?: { index: number; message: string; code?: string };
}

interface Pending {
  worker: Worker;
  resolve: (files: (SmallFile | undefined)[]) => void;
  reject: (err: Error) => void;
  /** the error for a file that could not be read for another reason than being missing */
  failed: (index: number, err: Error & { code?: string }) => Error;
}

export class SmallFileReader {
  private workers: Worker[] = [];
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;
  private idle?: NodeJS.Timeout;

  /** the files at these local paths, in order; undefined for a missing one (or a directory) */
  read(paths: readonly string[], failed: Pending['failed']): Promise<(SmallFile | undefined)[]> {
    if (paths.length === 0) return Promise.resolve([]);
    clearTimeout(this.idle);
    const id = this.nextId++;
    const worker = this.worker(id);
    return new Promise((resolve, reject) => {
      this.pending.set(id, { worker, resolve, reject, failed });
      worker.ref(); // unref'd again when it has nothing in flight
      worker.postMessage({ id, paths });
    });
  }

  async close(): Promise<void> {
    clearTimeout(this.idle);
    const workers = this.workers;
    this.workers = [];
    await Promise.all(workers.map((w) => w.terminate()));
  }

  private worker(id: number): Worker {
    if (this.workers.length < WORKERS) {
      const worker = new Worker(WORKER, { eval: true });
      worker.on('message', (reply: Reply) => this.settle(reply));
      worker.on('error', (err) => this.failAll(worker, err));
      // ended by close() (the driver closing) or a crash: what it had in flight fails
      worker.on('exit', () => this.failAll(worker, new Error('storage: the small-file reader ended before it answered')));
      worker.unref();
      this.workers.push(worker);
    }
    return this.workers[id % this.workers.length];
  }

  private settle(reply: Reply): void {
    const pending = this.pending.get(reply.id);
    if (!pending) return;
    this.pending.delete(reply.id);
    if (![...this.pending.values()].some((p) => p.worker === pending.worker)) pending.worker.unref();
    if (this.pending.size === 0) this.idle = setTimeout(() => void this.close(), IDLE_MS).unref();
    if (reply.error) {
      pending.reject(pending.failed(reply.error.index, Object.assign(new Error(reply.error.message), { code: reply.error.code })));
      return;
    }
    const all = Buffer.from(reply.bytes);
    const files: (SmallFile | undefined)[] = [];
    let at = 0;
    reply.lengths.forEach((length, i) => {
      if (length < 0) return void files.push(undefined);
      files.push({ content: all.subarray(at, at + length), modTimeMs: reply.times[i] });
      at += length;
    });
    pending.resolve(files);
  }

  /** a worker that died or ended fails what it had in flight; the next read starts another */
  private failAll(worker: Worker, err: Error): void {
    for (const [id, pending] of this.pending) {
      if (pending.worker !== worker) continue;
      this.pending.delete(id);
      pending.reject(err);
    }
    this.workers = this.workers.filter((w) => w !== worker);
  }
}
