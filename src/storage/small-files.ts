/**
 * Many small files (links, berth.json) read whole with their modification time by synchronous fs
 * calls on worker threads: the filesystem driver's readSmallFiles. A file read through libuv's
 * pool is four round trips (open, fstat, read, close), each a hand-off to a pool thread and back
 * with a promise; the index rebuild reads a few per tag and per manifest, and those round trips
 * were most of its CPU (docs/performance.md, "Index rebuild"). On a worker the same syscalls run
 * back to back, one message per batch, and the event loop is never blocked by them (a slow disk
 * stalls the worker, not requests). Workers start on first use and are unref'd.
 *
 * The same workers answer the driver's inspectDirectories: many directories' tokens, names and
 * the stat of a file below each name, for the index reconciler's fingerprints, which otherwise
 * took about ten calls through libuv's four pool threads per repository and queued a request's
 * own fs calls behind them (docs/performance.md, "The reconciler's pass at scale").
 */
import { Worker } from 'node:worker_threads';
import type { DirectoryFacts, DirectoryQuery, SmallFile } from './driver.js';

/** worker threads: the syscalls block their thread, so two keep a disk busy while one waits */
const WORKERS = 2;
/** idle this long, the workers end (a few MiB each; the reconciler's next pass starts them again) */
const IDLE_MS = 10_000;

/**
 * the worker: plain JavaScript (no loader needed). A message `read`: each path's content
 * (concatenated into one transferred buffer) and mtime, or a missing mark. A message `inspect`:
 * each directory's facts (the driver's childrenVersion token, listNames' names, the stat of a file
 * below each name). Either way, or the error's text and the index of the path it failed on.
 */
const WORKER = `
const { parentPort } = require('node:worker_threads');
const { openSync, fstatSync, readSync, closeSync, statSync, readdirSync } = require('node:fs');
const MISSING = new Set(['ENOENT', 'ENOTDIR', 'EISDIR']);
// a directory that is not there: as the driver's PathNotFoundError (ENOTDIR: a parent, or itself, a file)
const NO_DIR = new Set(['ENOENT', 'ENOTDIR']);
parentPort.on('message', (message) => {
  if (message.op === 'inspect') inspect(message);
  else read(message);
});
function read({ id, paths }) {
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
      else error = failure(i, err);
    } finally {
      if (fd !== undefined) closeSync(fd);
    }
  }
  const all = Buffer.concat(parts, total);
  const bytes = all.buffer.slice(all.byteOffset, all.byteOffset + all.length);
  parentPort.postMessage({ id, bytes, lengths, times, error }, [bytes, lengths.buffer, times.buffer]);
}
function inspect({ id, queries, settleMs, hidden }) {
  const isHidden = new RegExp(hidden);
  const facts = [];
  const transfer = [];
  let error;
  for (let i = 0; i < queries.length && error === undefined; i++) {
    try {
      const f = inspectOne(queries[i], settleMs, isHidden);
      if (f.sizes) transfer.push(f.sizes.buffer, f.times.buffer);
      facts.push(f);
    } catch (err) {
      error = failure(i, err);
    }
  }
  parentPort.postMessage({ id, facts, error }, transfer);
}
function inspectOne({ path, version, names, below }, settleMs, isHidden) {
  const facts = { exists: true };
  if (version) {
    const now = Date.now(); // before the stat, as the driver's childrenVersion
    const st = missingAs(undefined, () => statSync(path, { bigint: true }));
    if (st === undefined || !st.isDirectory()) return { exists: false };
    const changed = st.mtimeMs > st.ctimeMs ? st.mtimeMs : st.ctimeMs;
    if (Number(changed) <= now - settleMs) facts.version = st.dev + ':' + st.ino + ':' + st.mtimeNs;
  }
  if (!names) return facts;
  const all = missingAs(undefined, () => readdirSync(path));
  if (all === undefined) return { exists: false };
  facts.names = all.filter((n) => n.charCodeAt(0) !== 0x2e || !isHidden.test(n)).sort();
  if (below === undefined) return facts;
  facts.sizes = new Float64Array(facts.names.length);
  facts.times = new Float64Array(facts.names.length);
  facts.names.forEach((name, j) => {
    const st = missingAs(undefined, () => statSync(path + '/' + name + '/' + below));
    facts.sizes[j] = st === undefined ? -1 : st.isDirectory() ? 0 : st.size;
    facts.times[j] = st === undefined ? 0 : st.mtime.getTime();
  });
  return facts;
}
function missingAs(value, call) {
  try {
    return call();
  } catch (err) {
    if (NO_DIR.has(err && err.code)) return value;
    throw err;
  }
}
function failure(index, err) {
  return { index, message: String(err && err.message), code: err && err.code };
}
`;

/** what every reply carries: the message's id, and the error of the path it stopped at */
interface Reply {
  id: number;
  error?: { index: number; message: string; code?: string };
}

interface ReadReply extends Reply {
  bytes: ArrayBuffer;
  lengths: Float64Array;
  times: Float64Array;
}

/** a directory's facts as the worker sends them: the stats below its names in two arrays (size -1: missing) */
interface WorkerFacts {
  exists: boolean;
  version?: string;
  names?: string[];
  sizes?: Float64Array;
  times?: Float64Array;
}

interface InspectReply extends Reply {
  facts: WorkerFacts[];
}

interface Pending {
  worker: Worker;
  /** the reply made into the caller's answer */
  resolve: (reply: Reply) => void;
  reject: (err: Error) => void;
  /** the error for a path that could not be read for another reason than being missing */
  failed: (index: number, err: Error & { code?: string }) => Error;
}

export class SmallFileReader {
  private workers: Worker[] = [];
  private readonly pending = new Map<number, Pending>();
  private nextId = 0;
  private idle?: NodeJS.Timeout;

  /** the files at these local paths, in order; undefined for a missing one (or a directory) */
  async read(paths: readonly string[], failed: Pending['failed']): Promise<(SmallFile | undefined)[]> {
    if (paths.length === 0) return [];
    const reply = await this.send<ReadReply>({ paths }, failed);
    const all = Buffer.from(reply.bytes);
    const files: (SmallFile | undefined)[] = [];
    let at = 0;
    reply.lengths.forEach((length, i) => {
      if (length < 0) return void files.push(undefined);
      files.push({ content: all.subarray(at, at + length), modTimeMs: reply.times[i] });
      at += length;
    });
    return files;
  }

  /**
   * the facts of these local directories, in order (the driver's inspectDirectories): `settleMs`
   * as its childrenVersion's, `hidden` the pattern of names its listings leave out (temp files)
   */
  async inspect(queries: readonly DirectoryQuery[], settleMs: number, hidden: RegExp, failed: Pending['failed']): Promise<DirectoryFacts[]> {
    if (queries.length === 0) return [];
    const reply = await this.send<InspectReply>({ op: 'inspect', queries, settleMs, hidden: hidden.source }, failed);
    return reply.facts.map(({ sizes, times, ...facts }) => (sizes && times ? { ...facts, below: [...sizes].map((size, i) => (size < 0 ? undefined : { size, modTimeMs: times[i] })) } : facts));
  }

  private send<R extends Reply>(message: object, failed: Pending['failed']): Promise<R> {
    clearTimeout(this.idle);
    const id = this.nextId++;
    const worker = this.worker(id);
    return new Promise((resolve, reject) => {
      this.pending.set(id, { worker, resolve: resolve as (reply: Reply) => void, reject, failed });
      worker.ref(); // unref'd again when it has nothing in flight
      worker.postMessage({ id, ...message });
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
    if (reply.error) pending.reject(pending.failed(reply.error.index, Object.assign(new Error(reply.error.message), { code: reply.error.code })));
    else pending.resolve(reply);
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
