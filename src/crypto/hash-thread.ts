/**
 * Hashing off the main thread: one worker thread computes the running hashes of large single-pass
 * uploads (a monolithic push, a pull-through fetch), so the main thread only copies the bytes.
 * sha256 costs 0.6 CPU s per GiB on the bench machine, a fifth of a cold mirror pull's main-thread
 * work; the copy into a shared slot costs about a tenth of that (docs/performance.md).
 *
 * The bytes go through SLOTS slots of one SharedArrayBuffer (no allocation per batch, and a bound on
 * what waits to be hashed: a writer that outruns the thread waits for a free slot). The chunks
 * cannot be transferred instead: the same Buffers are still being written to the file and sent to
 * the clients reading along. Messages keep their order, so a digest asked for after the last update
 * covers every byte. The worker is started on first use and ended once no hash has been live for
 * IDLE_MS (its isolate costs several MiB of RSS).
 */
import { Worker } from 'node:worker_threads';

const SLOT = 1 << 20;
const SLOTS = 4;
const IDLE_MS = 5_000;

/** the worker's script (plain JavaScript: runs alike from src/ through tsx and from dist/) */
const SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { createHash } = require('node:crypto');
const shared = new Uint8Array(workerData.shared);
const hashes = new Map();
parentPort.on('message', (m) => {
  if (m.op === 'update') {
    let hash = hashes.get(m.id);
    if (!hash) hashes.set(m.id, (hash = createHash(m.algorithm)));
    hash.update(shared.subarray(m.slot * workerData.slot, m.slot * workerData.slot + m.length));
    parentPort.postMessage({ slot: m.slot });
  } else if (m.op === 'digest') {
    const hash = hashes.get(m.id) ?? createHash(m.algorithm);
    hashes.delete(m.id);
    parentPort.postMessage({ id: m.id, hex: hash.digest('hex') });
  } else if (m.op === 'drop') {
    hashes.delete(m.id);
  }
});
`;

type Message = { slot: number } | { id: number; hex: string };

interface Pending {
  resolve(hex: string): void;
  reject(err: Error): void;
}

class HashThread {
  private worker?: Worker;
  private shared?: Uint8Array;
  private free: number[] = [];
  private slotWaiters: { resolve(slot: number): void; reject(err: Error): void }[] = [];
  private readonly digests = new Map<number, Pending>();
  private nextId = 1;
  /** hashes started and not yet digested or dropped */
  private live = 0;
  private idle?: NodeJS.Timeout;

  open(algorithm: string): ThreadHash {
    this.start();
    this.live++;
    this.worker!.ref(); // a live hash keeps the process alive: its caller awaits slots and its digest
    clearTimeout(this.idle);
    return new ThreadHash(this, this.nextId++, algorithm);
  }

  /** copies `chunks` into free slots and has the worker hash them, in order */
  async update(id: number, algorithm: string, chunks: readonly Buffer[]): Promise<void> {
    let slot = -1;
    let used = 0;
    for (const chunk of chunks) {
      let at = 0;
      while (at < chunk.length) {
        if (slot < 0) {
          slot = await this.slot();
          used = 0;
        }
        const n = Math.min(SLOT - used, chunk.length - at);
        this.shared!.set(chunk.subarray(at, at + n), slot * SLOT + used);
        used += n;
        at += n;
        if (used === SLOT) {
          this.post({ op: 'update', id, algorithm, slot, length: used });
          slot = -1;
        }
      }
    }
    if (slot >= 0) this.post({ op: 'update', id, algorithm, slot, length: used });
  }

  private post(message: object): void {
    if (!this.worker) throw new Error('the hashing thread stopped');
    this.worker.postMessage(message);
  }

  digest(id: number, algorithm: string): Promise<string> {
    const worker = this.worker;
    if (!worker) return Promise.reject(new Error('the hashing thread stopped'));
    return new Promise<string>((resolve, reject) => {
      this.digests.set(id, { resolve, reject });
      worker.postMessage({ op: 'digest', id, algorithm });
    }).finally(() => this.release());
  }

  drop(id: number): void {
    this.worker?.postMessage({ op: 'drop', id });
    this.release();
  }

  private release(): void {
    this.live--;
    if (this.live > 0) return;
    this.worker?.unref();
    clearTimeout(this.idle);
    this.idle = setTimeout(() => this.stop(), IDLE_MS).unref();
  }

  private slot(): Promise<number> {
    const slot = this.free.pop();
    if (slot !== undefined) return Promise.resolve(slot);
    if (!this.worker) return Promise.reject(new Error('the hashing thread stopped'));
    return new Promise((resolve, reject) => this.slotWaiters.push({ resolve, reject }));
  }

  private start(): void {
    if (this.worker) return;
    const shared = new SharedArrayBuffer(SLOT * SLOTS);
    this.shared = new Uint8Array(shared);
    this.free = Array.from({ length: SLOTS }, (_, i) => i);
    const worker = new Worker(SOURCE, { eval: true, workerData: { shared, slot: SLOT }, execArgv: [], env: {} });
    worker.unref();
    worker.on('message', (m: Message) => {
      if ('slot' in m) {
        const waiter = this.slotWaiters.shift();
        if (waiter) waiter.resolve(m.slot);
        else this.free.push(m.slot);
        return;
      }
      const pending = this.digests.get(m.id);
      this.digests.delete(m.id);
      pending?.resolve(m.hex);
    });
    const failed = (err: Error) => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      for (const pending of this.digests.values()) pending.reject(err);
      this.digests.clear();
      for (const waiter of this.slotWaiters) waiter.reject(err);
      this.slotWaiters = [];
    };
    worker.on('error', failed);
    worker.on('exit', (code) => failed(new Error(`the hashing thread exited (code ${code})`)));
    this.worker = worker;
  }

  private stop(): void {
    if (this.live > 0 || !this.worker) return;
    const worker = this.worker;
    this.worker = undefined;
    void worker.terminate();
  }
}

/** a running hash computed by the hashing thread; `digest` or `drop` it, once */
export class ThreadHash {
  private done = false;
  /** the last update's copy: the next waits for it, so the slots keep the order of the bytes */
  private copied: Promise<void> = Promise.resolve();

  constructor(
    private readonly thread: HashThread,
    private readonly id: number,
    private readonly algorithm: string,
  ) {}

  /** hashes `chunks` after every earlier update; resolves once they are copied (the caller may reuse them then) */
  update(chunks: readonly Buffer[]): Promise<void> {
    this.copied = this.copied.then(() => this.thread.update(this.id, this.algorithm, chunks));
    return this.copied;
  }

  /** the hex digest of every byte given */
  async digest(): Promise<string> {
    await this.copied;
    this.done = true;
    return this.thread.digest(this.id, this.algorithm);
  }

  /** gives the hash up (the upload failed) */
  drop(): void {
    if (this.done) return;
    this.done = true;
    const drop = () => this.thread.drop(this.id);
    this.copied.then(drop, drop);
  }
}

const thread = new HashThread();

/** a new running hash of `algorithm` (sha256, sha384, sha512) on the hashing thread */
export function threadHash(algorithm: string): ThreadHash {
  return thread.open(algorithm);
}
