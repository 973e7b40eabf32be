/**
 * `loadConfig` (load.ts) run in a short-lived child process: yaml, zod and the built schema stay
 * out of the calling process (some 4.5 MiB of V8 heap in the bundled server). A worker thread
 * freed its isolate but left about as much RSS behind (its malloc arena, the node binary's pages
 * of a thread's start), so a process it is (docs/performance.md, "Idle RSS"). The rules and their
 * error messages stay in config/schema.ts and load.ts alone.
 */
import { fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { ConfigError } from './errors.js';
import type { LoadedConfig } from './load.js';
import type { LoadReply } from './load-worker.js';

/** the child's file beside this module: .ts when run from source (tsx), .js compiled or bundled (one folder, src/server-bundle.ts) */
function childFile(): string {
  return fileURLToPath(new URL(import.meta.url.endsWith('.ts') ? './load-worker.ts' : './load-worker.js', import.meta.url));
}

export async function loadConfigIsolated(file: string | undefined, env: NodeJS.ProcessEnv = process.env): Promise<LoadedConfig> {
  const reply = await new Promise<LoadReply>((resolve, reject) => {
    // 'advanced': the structured clone, so keys set to undefined come back as they left
    const child = fork(childFile(), file === undefined ? [] : [file], { env, serialization: 'advanced', stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    let answer: LoadReply | undefined;
    child.once('message', (message: LoadReply) => (answer = message));
    child.once('error', reject);
    child.once('exit', (code, signal) => (answer ? resolve(answer) : reject(new Error(`the configuration loader ended (${signal ?? `exit code ${code}`}) without an answer`))));
  });
  if ('problems' in reply) throw new ConfigError(reply.problems, reply.source);
  if ('failed' in reply) throw new Error(`the configuration loader failed: ${reply.failed}`);
  return reply.loaded;
}
