/**
 * Keeps V8's young generation at its initial size while berth starts. Loading the modules
 * allocates a lot, which grows the young generation to 2 × 16 MiB, and V8 keeps that committed
 * when the registry then sits idle: some 13 MiB of idle RSS. Imported first by the CLI, so the
 * flag is set before the other modules load; `startupDone()` gives V8 its default growth back, so
 * the young generation grows under load as it did before (docs/decisions.md, "Memory").
 * The growth factor is the one young-generation flag V8 reads at run time; the sizes are fixed
 * when the heap is set up.
 */
import { setFlagsFromString } from 'node:v8';

/** V8's default --semi-space-growth-factor */
const DEFAULT_GROWTH = 2;

setFlagsFromString('--semi-space-growth-factor=1');

export function startupDone(): void {
  setFlagsFromString(`--semi-space-growth-factor=${DEFAULT_GROWTH}`);
}
