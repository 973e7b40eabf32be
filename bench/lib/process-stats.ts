/**
 * What a registry process costs: CPU seconds (utime + stime of every thread, from /proc/<pid>/stat)
 * and peak resident memory (VmHWM, reset per measurement through /proc/<pid>/clear_refs).
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { readProcessMemory, resetPeakRss } from '../../test/helpers/berth-process.js';

let ticks: number | undefined;

/** clock ticks per second (getconf CLK_TCK; 100 on every Linux we know) */
function clockTicks(): number {
  if (ticks === undefined) {
    try {
      ticks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim()) || 100;
    } catch {
      ticks = 100;
    }
  }
  return ticks;
}

/** user + system CPU seconds the process has used since it started */
export function cpuSeconds(pid: number): number {
  return statCpuSeconds(`/proc/${pid}/stat`);
}

/** user + system CPU seconds this process's main thread (its JavaScript, and what runs synchronously on it: SQLite) has used */
export function mainThreadCpuSeconds(): number {
  return statCpuSeconds(`/proc/self/task/${process.pid}/stat`);
}

function statCpuSeconds(file: string): number {
  const stat = readFileSync(file, 'utf8');
  // the command name (field 2) is in parentheses and may contain spaces: count after the last ')'
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // fields[0] is field 3 (state); utime and stime are fields 14 and 15
  return (Number(fields[11]) + Number(fields[12])) / clockTicks();
}

export interface Usage {
  /** CPU seconds used during the measurement */
  cpu: number;
  /** peak RSS during the measurement, in bytes (VmHWM after a reset) */
  peakRss: number;
  /** RSS when the measurement started, in bytes: the process's idle RSS then (it settled before each measurement) */
  startRss?: number;
  /** false when the kernel refused to reset VmHWM: peakRss is then the peak since start */
  peakReset: boolean;
}

/** runs `fn` and reports what the process `pid` used meanwhile */
export async function measure<T>(pid: number, fn: () => Promise<T>): Promise<{ value: T; usage: Usage }> {
  const peakReset = resetPeakRss(pid);
  const startRss = readProcessMemory(pid).rss;
  const cpu0 = cpuSeconds(pid);
  const value = await fn();
  const cpu1 = cpuSeconds(pid);
  const { hwm } = readProcessMemory(pid);
  return { value, usage: { cpu: cpu1 - cpu0, peakRss: hwm, startRss, peakReset } };
}

/**
 * Waits until the process is idle: below `busy` CPU seconds per second over a 250 ms window, for at
 * most `maxMs`. A load generator that stops does not stop the server: requests it queued are still
 * being answered, and that work must not count against the next measurement.
 */
export async function settle(pid: number, maxMs = 60_000, busy = 0.05): Promise<number> {
  const started = Date.now();
  for (;;) {
    const c0 = cpuSeconds(pid);
    await new Promise((resolve) => setTimeout(resolve, 250));
    if ((cpuSeconds(pid) - c0) / 0.25 < busy || Date.now() - started > maxMs) return Date.now() - started;
  }
}
