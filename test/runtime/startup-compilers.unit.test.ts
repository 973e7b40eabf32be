/**
 * `berth serve` starts on V8's interpreter alone (src/runtime/startup-heap.ts): start-up code runs
 * once, and compiling it kept about 9 MiB of idle RSS. `compileFully()` gives the usual compilers
 * back, so the code that serves requests is optimized as before. Checked in a child process, with
 * V8's own view of a hot function (%GetOptimizationStatus), not with a timing or an RSS figure.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { it } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '../..');
const MODULE = pathToFileURL(join(ROOT, 'src/runtime/startup-heap.ts')).href;

/** V8's OptimizationStatus bits (src/runtime/runtime.h) */
const OPTIMIZED = 1 << 4;
const INTERPRETED = 1 << 7;
const BASELINE = 1 << 15;

const CHILD = `
const { compileFully } = await import(${JSON.stringify(MODULE)});
const status = new Function('f', 'return %GetOptimizationStatus(f)');
const hot = () => {
  const f = (x) => { let s = 0; for (let i = 0; i < 50; i++) s += (x * i) % 7; return s; };
  for (let i = 0; i < 100000; i++) f(i);
  return status(f);
};
const held = hot();
compileFully();
console.log(JSON.stringify({ held, after: hot() }));
`;

it('holds Sparkplug and TurboFan while berth starts, and gives them back with compileFully()', () => {
  const out = execFileSync(process.execPath, ['--allow-natives-syntax', '--import', 'tsx', '--input-type=module', '-e', CHILD], { cwd: ROOT, encoding: 'utf8' });
  const { held, after } = JSON.parse(out.trim().split('\n').pop() as string) as { held: number; after: number };
  assert.ok(held & INTERPRETED, `a hot function stays interpreted during start-up (status ${held.toString(2)})`);
  assert.equal(held & (OPTIMIZED | BASELINE), 0, `no compiled code during start-up (status ${held.toString(2)})`);
  assert.ok(after & (OPTIMIZED | BASELINE), `a hot function is compiled once start-up is over (status ${after.toString(2)})`);
});
