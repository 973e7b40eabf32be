/**
 * Hashing off the main thread: one worker thread computes the running hashes of the pull-through
 * cache's blob fetches (the only caller: src/proxy/blob-fetch.ts through UploadSessions.complete's
 * `hashOffThread`; pushes hash on the main thread, as the thread costs RSS and, with both cores
 * busy, gained them nothing: docs/performance.md), so the main thread only copies the bytes.
 * sha256 costs 0.6 CPU s per GiB on the bench machine, a fifth of a cold mirror pull's main-thread
 * work; the copy into a shared slot costs about a tenth of that (docs/performance.md).
 *
 * The bytes go through SLOTS slots of one SharedArrayBuffer (no allocation per batch, and a bound on
 * what waits to be hashed: a writer that outruns the thread waits for a free slot). The chunks
 * cannot be transferred instead: the same Buffers are still being written to the file and sent to
 * the clients reading along. The handoff is a ring in shared memory, not messages: a descriptor per
 * slot (what to do, for which hash, how many bytes) and two counters, submitted and consumed, woken
 * with Atomics.notify. A postMessage per slot and its reply cost the main thread a serialisation, a
 * wakeup and an event each way (7% of a cold mirror pull's main thread, docs/performance.md); the
 * ring costs a store and a notify, and the main thread waits (Atomics.waitAsync) only when the
 * thread is behind by every slot. Only a digest comes back as a message.
 *
 * The thread hashes faster than the main thread copies, so it is asleep whenever a slot arrives, and
 * each wakeup (a futex, and on a busy machine the main thread losing its core to the woken thread)
 * was the handoff's cost, not the store. So updates wake it only once WAKE_AT slots wait (a
 * digest, a drop, or a caller that needs a free slot wakes it at once), and only when it sleeps
 * (it says so in a control word): a quarter of the wakeups per byte. The worker takes the
 * descriptors in order, so a digest submitted after the last update covers every byte. The worker
 * is started on first use and ended once no hash has been live for IDLE_MS (its isolate costs
 * several MiB of RSS).
 */
import { Worker } from 'node:worker_threads';

const SLOT = 1 << 20;
const SLOTS = 8;
/** updates wake the sleeping thread once this many slots wait to be hashed */
const WAKE_AT = 4;
const IDLE_MS = 5_000;
/** the counters wrap here (a multiple of SLOTS, so a count's slot stays count % SLOTS) */
const WRAP = 1 << 30;
/** control words: descriptors submitted, descriptors done, the thread sleeps (1) or not; then a descriptor of DESCRIPTOR words per slot */
const SUBMITTED = 0;
const CONSUMED = 1;
const SLEEPING = 2;
const HEADER = 3;
const DESCRIPTOR = 4;
const UPDATE = 1;
const DIGEST = 2;
const DROP = 3;
const ALGORITHMS = ['sha256', 'sha384', 'sha512'];
/** how long a wait for a free slot sleeps before it checks again that the worker still runs */
const RECHECK_MS = 1_000;

/** Atomics.waitAsync (V8 since Node 16; not in the TypeScript lib this project targets) */
const waitAsync = (Atomics as unknown as {
  waitAsync(array: Int32Array, index: number, value: number, timeoutMs: number): { async: boolean; value: unknown };
}).waitAsync;

/** the worker's script (plain JavaScript: runs alike from src/ through tsx and from dist/) */
const SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { createHash } = require('node:crypto');
const { slot, slots, wrap, algorithms } = workerData;
const data = new Uint8Array(workerData.data);
const control = new Int32Array(workerData.control);
const hashes = new Map();
for (let next = 0; ; next = (next + 1) % wrap) {
  if (Atomics.load(control, ${SUBMITTED}) === next) {
    // said before the last look, so a submitter either sees it (and wakes us) or we see its descriptor
    Atomics.store(control, ${SLEEPING}, 1);
    while (Atomics.load(control, ${SUBMITTED}) === next) Atomics.wait(control, ${SUBMITTED}, next);
    Atomics.store(control, ${SLEEPING}, 0);
  }
  const at = next % slots;
  const d = ${HEADER} + at * ${DESCRIPTOR};
  const op = control[d], id = control[d + 1], algorithm = algorithms[control[d + 2]], length = control[d + 3];
  if (op === ${UPDATE}) {
    let hash = hashes.get(id);
    if (!hash) hashes.set(id, (hash = createHash(algorithm)));
    hash.update(data.subarray(at * slot, at * slot + length));
  } else if (op === ${DIGEST}) {
    const hash = hashes.get(id) ?? createHash(algorithm);
    hashes.delete(id);
    parentPort.postMessage({ id, hex: hash.digest('hex') });
  } else if (op === ${DROP}) {
    hashes.delete(id);
  }
  Atomics.store(control, ${CONSUMED}, (next + 1) % wrap);
  Atomics.notify(control, ${CONSUMED});
}
`;

interface Pending {
  resolve(hex: string): void;
  reject(err: Error): void;
}

class HashThread {
  private worker?: Worker;
  private data?: Uint8Array;
  private control?: Int32Array;
  /** descriptors submitted to the running worker (mod WRAP) */
  private submitted = 0;
  /** counts the workers started: a hash belongs to the one it was opened on */
  private generation = 0;
  private readonly digests = new Map<number, Pending>();
  private nextId = 1;
  /** hashes started and not yet digested or dropped */
  private live = 0;
  private idle?: NodeJS.Timeout;

  open(algorithm: string): ThreadHash {
    const index = ALGORITHMS.indexOf(algorithm);
    if (index < 0) throw new Error(`the hashing thread does not compute ${algorithm}`);
    this.start();
    this.live++;
    this.worker!.ref(); // a live hash keeps the process alive: its caller awaits slots and its digest
    clearTimeout(this.idle);
    return new ThreadHash(this, this.generation, this.nextId++, index);
  }

  /** copies `chunks` into free slots and has the worker hash them, in order */
  async update(generation: number, id: number, algorithm: number, chunks: readonly Buffer[]): Promise<void> {
    let at = -1;
    let used = 0;
    for (const chunk of chunks) {
      let from = 0;
      while (from < chunk.length) {
        if (at < 0) {
          while (!this.slotFree(generation)) await this.progress();
          at = this.submitted % SLOTS;
          used = 0;
        }
        const n = Math.min(SLOT - used, chunk.length - from);
        this.data!.set(chunk.subarray(from, from + n), at * SLOT + used);
        used += n;
        from += n;
        if (used === SLOT) {
          this.submit(UPDATE, id, algorithm, used);
          at = -1;
        }
      }
    }
    if (at >= 0) this.submit(UPDATE, id, algorithm, used);
  }

  async digest(generation: number, id: number, algorithm: number): Promise<string> {
    try {
      while (!this.slotFree(generation)) await this.progress();
      return await new Promise<string>((resolve, reject) => {
        this.digests.set(id, { resolve, reject });
        this.submit(DIGEST, id, algorithm, 0);
      });
    } finally {
      this.release();
    }
  }

  async drop(generation: number, id: number): Promise<void> {
    try {
      while (!this.slotFree(generation)) await this.progress();
      this.submit(DROP, id, 0, 0);
    } catch {
      // the worker is gone, and its hashes with it
    } finally {
      this.release();
    }
  }

  private release(): void {
    this.live--;
    if (this.live > 0) return;
    this.worker?.unref();
    clearTimeout(this.idle);
    this.idle = setTimeout(() => this.stop(), IDLE_MS).unref();
  }

  /**
   * whether the worker took what was in the next slot (this.submitted % SLOTS). A caller that finds
   * it free fills it and submits in the same synchronous run: another caller resumed in between
   * would claim the same slot.
   */
  private slotFree(generation: number): boolean {
    if (!this.worker || generation !== this.generation) throw new Error('the hashing thread stopped');
    return (this.submitted - Atomics.load(this.control!, CONSUMED) + WRAP) % WRAP < SLOTS;
  }

  /** resolves once the worker took another descriptor (or after RECHECK_MS, to look again whether it still runs) */
  private async progress(): Promise<void> {
    const control = this.control!;
    this.wake(); // what waits may be below WAKE_AT
    const wait = waitAsync(control, CONSUMED, Atomics.load(control, CONSUMED), RECHECK_MS);
    if (wait.async) await wait.value;
  }

  private submit(op: number, id: number, algorithm: number, length: number): void {
    const control = this.control!;
    const d = HEADER + (this.submitted % SLOTS) * DESCRIPTOR;
    control[d] = op;
    control[d + 1] = id;
    control[d + 2] = algorithm;
    control[d + 3] = length;
    this.submitted = (this.submitted + 1) % WRAP;
    Atomics.store(control, SUBMITTED, this.submitted);
    if (op !== UPDATE || (this.submitted - Atomics.load(control, CONSUMED) + WRAP) % WRAP >= WAKE_AT) this.wake();
  }

  /** wakes the thread if it sleeps */
  private wake(): void {
    if (Atomics.load(this.control!, SLEEPING) === 1) Atomics.notify(this.control!, SUBMITTED);
  }

  private start(): void {
    if (this.worker) return;
    const data = new SharedArrayBuffer(SLOT * SLOTS);
    const control = new SharedArrayBuffer(Int32Array.BYTES_PER_ELEMENT * (HEADER + SLOTS * DESCRIPTOR));
    this.data = new Uint8Array(data);
    this.control = new Int32Array(control);
    this.submitted = 0;
    this.generation++;
    const workerData = { data, control, slot: SLOT, slots: SLOTS, wrap: WRAP, algorithms: ALGORITHMS };
    const worker = new Worker(SOURCE, { eval: true, workerData, execArgv: [], env: {} });
    worker.unref();
    worker.on('message', (m: { id: number; hex: string }) => {
      const pending = this.digests.get(m.id);
      this.digests.delete(m.id);
      pending?.resolve(m.hex);
    });
    const failed = (err: Error) => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      for (const pending of this.digests.values()) pending.reject(err);
      this.digests.clear();
      Atomics.notify(this.control!, CONSUMED); // the waits for a slot see the worker gone
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
    /** the worker it lives on */
    private readonly generation: number,
    private readonly id: number,
    /** its index in ALGORITHMS */
    private readonly algorithm: number,
  ) {}

  /** hashes `chunks` after every earlier update; resolves once they are copied (the caller may reuse them then) */
  update(chunks: readonly Buffer[]): Promise<void> {
    this.copied = this.copied.then(() => this.thread.update(this.generation, this.id, this.algorithm, chunks));
    return this.copied;
  }

  /** the hex digest of every byte given */
  async digest(): Promise<string> {
    await this.copied;
    this.done = true;
    return this.thread.digest(this.generation, this.id, this.algorithm);
  }

  /** gives the hash up (the upload failed) */
  drop(): void {
    if (this.done) return;
    this.done = true;
    const drop = () => void this.thread.drop(this.generation, this.id);
    this.copied.then(drop, drop);
  }
}

const thread = new HashThread();

/** a new running hash of `algorithm` (sha256, sha384, sha512) on the hashing thread */
export function threadHash(algorithm: string): ThreadHash {
  return thread.open(algorithm);
}
