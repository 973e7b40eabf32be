/**
 * Collects short-lived Buffers sooner than V8 would by itself, once `paceShortLivedBuffers()` has
 * been called (by the entry points, cli.ts and app.ts); the code that makes them notes them on a
 * diagnostics channel (src/storage/short-lived-bytes.ts). Every socket read of a request body
 * becomes a fresh Buffer (Node's HTTP parser copies each body piece into its own), so a 1 GiB push
 * makes 16,000 short-lived 64 KiB ArrayBuffers; a stored file hashed again (a sha512 digest, an
 * upload resumed on another instance, `berth verify`) is read into a fresh 1 MiB Buffer per chunk;
 * a blob streamed from S3 arrives as a fresh Buffer per socket read of the store's answer.
 * V8 counts them as external memory and, with few JavaScript objects allocated meanwhile, frees
 * them only when 64 MiB more of it have piled up (a scavenge for "external memory pressure"): that
 * pile was most of a push's peak RSS. A scavenge every 4 MiB of such bytes frees them while they
 * are young; it costs about a millisecond when the young generation holds little else
 * (docs/decisions.md, "Memory").
 *
 * V8's `gc` function comes from a fresh context with --expose-gc set for that moment only: the
 * registry's own global gets no `gc`.
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import diagnostics from 'node:diagnostics_channel';
import { SHORT_LIVED_BYTES } from '../storage/short-lived-bytes.js';

const EVERY = 4 * 1024 * 1024;

type Collect = (options?: { type: 'minor' }) => void;

function exposeGc(): Collect | undefined {
  try {
    setFlagsFromString('--expose-gc');
    const gc: unknown = runInNewContext('gc');
    return typeof gc === 'function' ? (gc as Collect) : undefined;
  } catch {
    return undefined;
  } finally {
    setFlagsFromString('--no-expose-gc');
  }
}

let collect: Collect | undefined | null = null;
let received = 0;

function noted(bytes: unknown): void {
  received += bytes as number;
  if (received < EVERY) return;
  received = 0;
  if (collect === null) collect = exposeGc();
  collect?.({ type: 'minor' });
}

let pacing = false;

/** from now on, a minor collection every 4 MiB of short-lived Buffers noted (idempotent) */
export function paceShortLivedBuffers(): void {
  if (pacing) return;
  pacing = true;
  diagnostics.subscribe(SHORT_LIVED_BYTES, noted);
}

/**
 * a full (mark-compact) collection now, where V8 lets one be called: the offline garbage collector
 * calls it every few hundred repositories, whose promoted garbage was half of its heap's peak
 */
export function collectFully(): void {
  if (collect === null) collect = exposeGc();
  collect?.(); // without options: Node 20's V8 takes `{ type: 'major' }` for a minor one
}
