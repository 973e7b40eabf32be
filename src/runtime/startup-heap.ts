/**
 * Keeps V8's young generation at its initial size while berth starts. Loading the modules
 * allocates a lot, which grows the young generation to 2 × 16 MiB, and V8 keeps that committed
 * when the registry then sits idle: some 13 MiB of idle RSS. Imported first by the CLI, so the
 * flag is set before the other modules load. Once the registry serves, `servingStarted()` lets
 * the young generation grow under load up to YOUNG_CAP only (V8 would take 2 × 16 MiB and keep
 * it): after each collection the factor is 2 below the cap and 1 at it. The offline collector
 * keeps the start-up's young generation: its walk's garbage is short-lived, and 2 × 16 MiB of it
 * was a third of its peak RSS for no measured speed (docs/decisions.md, "Memory").
 * The growth factor is the one young-generation flag V8 reads at run time; the sizes are fixed
 * when the heap is set up.
 *
 * The compilers beyond the interpreter (Sparkplug, TurboFan) wait too: start-up code runs once,
 * and compiling it kept some 9 MiB of idle RSS (TurboFan's background jobs grow malloc arenas,
 * Sparkplug's code stays in the code space). `compileFully()` turns them back on before any
 * request is served or any other command runs, so hot paths are optimized as before
 * (docs/performance.md, "Idle RSS").
 */
import { PerformanceObserver } from 'node:perf_hooks';
import { getHeapSpaceStatistics, setFlagsFromString } from 'node:v8';

/** V8's default --semi-space-growth-factor */
const DEFAULT_GROWTH = 2;
/** both semi-spaces together; V8's own limit is 2 × 16 MiB */
const YOUNG_CAP = 8 * 1024 * 1024;

setFlagsFromString('--semi-space-growth-factor=1');
setFlagsFromString('--no-sparkplug');
setFlagsFromString('--no-turbofan');

/** start-up is over (or the command is not `serve`): V8's usual compilers from now on */
export function compileFully(): void {
  setFlagsFromString('--sparkplug');
  setFlagsFromString('--turbofan');
}

/**
 * a command whose work is system calls, not JavaScript (the offline garbage collection): TurboFan
 * stays off. Its code and its background jobs' memory were some 8 MiB of that command's peak RSS,
 * for no CPU time measured (docs/performance.md, "Offline garbage collection"); Sparkplug stays.
 */
export function withoutOptimizingCompiler(): void {
  setFlagsFromString('--no-turbofan');
}

function youngSize(): number {
  return getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')?.space_size ?? 0;
}

/** the registry serves: the young generation may grow, to YOUNG_CAP */
export function servingStarted(): void {
  compileFully();
  // set after every collection, not only when it changes: a worker thread's start (the filesystem
  // driver's small-files threads, the proxy's hashing thread) sets V8's flags back to the command
  // line's, and the young generation then grew to 2 × 16 MiB during the start-up index build
  const hold = () => setFlagsFromString(`--semi-space-growth-factor=${youngSize() * DEFAULT_GROWTH <= YOUNG_CAP ? DEFAULT_GROWTH : 1}`);
  hold();
  new PerformanceObserver(hold).observe({ entryTypes: ['gc'] });
}
