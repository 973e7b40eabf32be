/**
 * Settings shared by the property tests of test/fuzz (issue 18). In `npm test` every property runs
 * with a fixed seed and its own small number of runs, so CI sees the same inputs each time;
 * `npm run fuzz` sets FUZZ_RUNS (runs per property) and FUZZ_SEED (a number, or `random`).
 * A failure prints the seed and the shrunk counterexample, which replays with FUZZ_SEED.
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { RegistryError, type ErrorCode } from '../../src/registry/errors.js';

const CI_SEED = 18;

function seed(): number | undefined {
  const value = process.env.FUZZ_SEED;
  if (value === undefined || value === '') return CI_SEED;
  if (value === 'random') return undefined;
  const n = Number(value);
  if (!Number.isSafeInteger(n)) throw new Error(`FUZZ_SEED must be an integer or "random", got ${JSON.stringify(value)}`);
  return n;
}

/** fast-check parameters: `runs` in CI, FUZZ_RUNS when set */
export function params<T>(runs: number): fc.Parameters<T> {
  const fromEnv = Number(process.env.FUZZ_RUNS);
  const s = seed();
  return { numRuns: Number.isSafeInteger(fromEnv) && fromEnv > 0 ? fromEnv : runs, ...(s === undefined ? {} : { seed: s }) };
}

/** what `fn` gives: a value, or (the only other outcome allowed) a RegistryError with one of `codes` */
export function outcome<T>(fn: () => T, codes: readonly ErrorCode[]): { value: T } | { error: RegistryError } {
  try {
    return { value: fn() };
  } catch (err) {
    return { error: registryError(err, codes) };
  }
}

export async function outcomeAsync<T>(fn: () => Promise<T>, codes: readonly ErrorCode[]): Promise<{ value: T } | { error: RegistryError }> {
  try {
    return { value: await fn() };
  } catch (err) {
    return { error: registryError(err, codes) };
  }
}

/** `err` as a RegistryError with one of `codes` and a message a person can read; else the property fails */
function registryError(err: unknown, codes: readonly ErrorCode[]): RegistryError {
  if (!(err instanceof RegistryError)) throw new assert.AssertionError({ message: `expected a RegistryError (${codes.join(', ')}), got ${String((err as Error)?.stack ?? err)}` });
  assert.ok(codes.includes(err.code), `expected one of ${codes.join(', ')}, got ${err.code}: ${err.message}`);
  assert.ok(err.message.length > 10, `a message a person understands, got ${JSON.stringify(err.message)}`);
  return err;
}
