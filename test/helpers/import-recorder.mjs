/**
 * `node --import <this file>` with BERTH_IMPORT_LOG=<file>: appends the URL of every module the ESM
 * loader resolves (one a line, after the process's id) to that file, so a test can tell which
 * modules a child process loaded, and which of its own children loaded them.
 * Modules that CommonJS packages require() among themselves are not seen; the packages berth imports
 * are. Plain JavaScript: its resolve hook runs in the loader's own thread, where this file registers
 * nothing.
 */
import { appendFileSync } from 'node:fs';
import { register } from 'node:module';
import { isMainThread } from 'node:worker_threads';

let log;
let pid;

export function initialize(data) {
  log = data.log;
  pid = data.pid;
}

export async function resolve(specifier, context, nextResolve) {
  const result = await nextResolve(specifier, context);
  appendFileSync(log, `${pid} ${result.url}\n`);
  return result;
}

if (isMainThread && process.env.BERTH_IMPORT_LOG) register(import.meta.url, { data: { log: process.env.BERTH_IMPORT_LOG, pid: process.pid } });
