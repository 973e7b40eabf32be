// Generic helpers for tests that drive real server processes (the reference registry,
// berth as a child process, radosgw, redis-server, ...).
//
// - spawnLogged(): spawn with stdout/stderr captured (bounded) for error messages.
// - cleanEnv(): a copy of process.env without CA-bundle variables and chosen prefixes.
// - waitForHttp(): poll a URL until it answers the expected status, the process exits, or time runs out.
// - killPid(): SIGTERM, then SIGKILL after a grace period, and wait until the process is gone.
// - exit guard: every process spawned through spawnLogged() is SIGKILLed when the test process
//   exits, so a failing test never leaks a server.

import { spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';

/** Variables that point TLS clients at a CA bundle; a server inheriting them may fail to start
 *  (e.g. Distribution's S3 driver refuses an AWS_CA_BUNDLE it cannot use). */
export const CA_ENV_VARS = [
  'AWS_CA_BUNDLE',
  'SSL_CERT_FILE',
  'SSL_CERT_DIR',
  'REQUESTS_CA_BUNDLE',
  'CURL_CA_BUNDLE',
  'NODE_EXTRA_CA_CERTS',
  'NIX_SSL_CERT_FILE',
] as const;

export interface CleanEnvOptions {
  /** Drop the CA-bundle variables of CA_ENV_VARS (default true). */
  dropCaVars?: boolean;
  /** Drop every variable whose name starts with one of these prefixes (e.g. 'REGISTRY_'). */
  dropPrefixes?: string[];
  /** Set (or, with undefined, remove) these variables after dropping. */
  set?: Record<string, string | undefined>;
}

export function cleanEnv(options: CleanEnvOptions = {}): NodeJS.ProcessEnv {
  const { dropCaVars = true, dropPrefixes = [], set = {} } = options;
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (value === undefined) continue;
    if (dropCaVars && (CA_ENV_VARS as readonly string[]).includes(key)) continue;
    if (dropPrefixes.some((p) => key.startsWith(p))) continue;
    env[key] = value;
  }
  for (const [key, value] of Object.entries(set)) {
    if (value === undefined) delete env[key];
    else env[key] = value;
  }
  return env;
}

export interface LoggedProcess {
  child: ChildProcess;
  pid: number;
  /** Resolves with the exit code / signal once the process has exited. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** True once the process has exited. */
  hasExited(): boolean;
  /** Captured stdout + stderr (interleaved as received, last `maxLogBytes` kept). */
  logs(): string;
  /** Captured stderr only. */
  stderr(): string;
}

export interface SpawnLoggedOptions extends Omit<SpawnOptions, 'stdio' | 'detached'> {
  /** Keep at most this many characters of output (default 1 MiB). */
  maxLogChars?: number;
  /** Also echo output to the test process's stderr (default: when BERTH_TEST_ECHO=1). */
  echo?: boolean;
  /** A short label for echoed lines. */
  label?: string;
}

const guarded = new Set<ChildProcess>();
let guardInstalled = false;

/** SIGKILL every guarded child that is still running (synchronous; safe in an 'exit' handler). */
export function killAllGuarded(): void {
  for (const child of guarded) {
    if (child.exitCode === null && child.signalCode === null && child.pid !== undefined) {
      try {
        process.kill(child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  }
}

function installExitGuard(): void {
  if (guardInstalled) return;
  guardInstalled = true;
  process.on('exit', killAllGuarded);
  // 'exit' is not emitted when the test process dies from a signal (e.g. the runner's timeout
  // or Ctrl-C). When nobody else handles the signal, kill the children and re-raise it so the
  // default action (terminate) still happens.
  for (const sig of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    if (process.listenerCount(sig) > 0) continue;
    process.once(sig, () => {
      killAllGuarded();
      if (process.listenerCount(sig) === 0) process.kill(process.pid, sig);
    });
  }
}

/** Register a child so it is SIGKILLed when the test process exits. spawnLogged() does this itself. */
export function guardProcess(child: ChildProcess): void {
  installExitGuard();
  guarded.add(child);
  child.once('exit', () => guarded.delete(child));
}

function appendBounded(current: string, chunk: string, max: number): string {
  const next = current + chunk;
  return next.length > max ? next.slice(next.length - max) : next;
}

/** Spawn a process with its output captured. Rejects if the executable cannot be started. */
export async function spawnLogged(
  command: string,
  args: readonly string[],
  options: SpawnLoggedOptions = {},
): Promise<LoggedProcess> {
  const { maxLogChars = 1 << 20, echo = process.env.BERTH_TEST_ECHO === '1', label, ...spawnOpts } = options;
  const child = spawn(command, args, { ...spawnOpts, stdio: ['ignore', 'pipe', 'pipe'] });
  guardProcess(child);

  let all = '';
  let err = '';
  const prefix = `[${label ?? command.split('/').pop()}] `;
  child.stdout?.setEncoding('utf8');
  child.stderr?.setEncoding('utf8');
  child.stdout?.on('data', (s: string) => {
    all = appendBounded(all, s, maxLogChars);
    if (echo) process.stderr.write(prefix + s);
  });
  child.stderr?.on('data', (s: string) => {
    all = appendBounded(all, s, maxLogChars);
    err = appendBounded(err, s, maxLogChars);
    if (echo) process.stderr.write(prefix + s);
  });

  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    // 'close' fires after the stdio streams are drained, so logs() is complete by then.
    child.once('close', (code, signal) => resolve({ code, signal }));
  });

  await new Promise<void>((resolve, reject) => {
    child.once('spawn', () => resolve());
    child.once('error', (e) => reject(new Error(`cannot start ${command}: ${e.message}`)));
  });
  if (child.pid === undefined) throw new Error(`cannot start ${command}: no pid`);

  return {
    child,
    pid: child.pid,
    exited,
    hasExited: () => child.exitCode !== null || child.signalCode !== null,
    logs: () => all,
    stderr: () => err,
  };
}

/** True if a process with this PID exists (signal 0 probe). A zombie still counts as alive. */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export interface KillOptions {
  /** Milliseconds between SIGTERM and SIGKILL (default 3000). */
  graceMs?: number;
  /** Milliseconds to wait after SIGKILL before giving up (default 5000). */
  killWaitMs?: number;
}

/**
 * Stop a process by PID: SIGTERM, then SIGKILL after graceMs, and wait until it has exited.
 * Pass the LoggedProcess (or its `exited` promise) when the process is our child, so the
 * wait also reaps it; a bare PID is polled with signal 0.
 */
export async function killPid(
  target: number | LoggedProcess,
  options: KillOptions = {},
): Promise<void> {
  const { graceMs = 3000, killWaitMs = 5000 } = options;
  const pid = typeof target === 'number' ? target : target.pid;
  const isGone = async (ms: number): Promise<boolean> => {
    if (typeof target !== 'number') {
      if (target.hasExited()) {
        await target.exited;
        return true;
      }
      const timer = sleep(ms).then(() => false);
      return Promise.race([target.exited.then(() => true), timer]);
    }
    const deadline = Date.now() + ms;
    while (Date.now() < deadline) {
      if (!pidAlive(pid)) return true;
      await sleep(25);
    }
    return !pidAlive(pid);
  };

  if (typeof target !== 'number' && target.hasExited()) {
    await target.exited;
    return;
  }
  if (!signal(pid, 'SIGTERM')) return;
  if (await isGone(graceMs)) return;
  if (!signal(pid, 'SIGKILL')) return;
  if (await isGone(killWaitMs)) return;
  throw new Error(`process ${pid} did not exit after SIGKILL`);
}

function signal(pid: number, sig: NodeJS.Signals): boolean {
  try {
    process.kill(pid, sig);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw e;
  }
}

export interface WaitForHttpOptions {
  /** Overall deadline in milliseconds (default 15000). */
  timeoutMs?: number;
  /** Pause between attempts (default 100 ms). */
  intervalMs?: number;
  /** Status that counts as ready (default 200). */
  status?: number;
  /** When given, stop waiting as soon as this process exits. */
  process?: LoggedProcess;
  /** Included in error messages (e.g. 'docker-registry'). */
  name?: string;
}

/**
 * Poll `url` with GET until it answers `status`. Rejects, with the process's captured output
 * when given, if the process exits first or the deadline passes.
 */
export async function waitForHttp(url: string, options: WaitForHttpOptions = {}): Promise<void> {
  const { timeoutMs = 15000, intervalMs = 100, status = 200, process: proc, name = url } = options;
  const deadline = Date.now() + timeoutMs;
  let last = 'no attempt made';
  const tail = (): string => (proc ? `\n--- output ---\n${proc.logs().slice(-8000)}` : '');
  while (Date.now() < deadline) {
    if (proc?.hasExited()) {
      const { code, signal: sig } = await proc.exited;
      throw new Error(`${name} exited (code ${code}, signal ${sig}) before ${url} answered ${status}${tail()}`);
    }
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(Math.max(500, Math.min(2000, deadline - Date.now()))) });
      await res.arrayBuffer().catch(() => undefined);
      if (res.status === status) return;
      last = `status ${res.status}`;
    } catch (e) {
      const err = e as Error & { cause?: { code?: string; message?: string } };
      last = err.cause?.code ?? err.cause?.message ?? err.message;
    }
    await sleep(intervalMs);
  }
  if (proc?.hasExited()) {
    const { code, signal: sig } = await proc.exited;
    throw new Error(`${name} exited (code ${code}, signal ${sig}) before ${url} answered ${status}${tail()}`);
  }
  throw new Error(`${name}: ${url} did not answer ${status} within ${timeoutMs} ms (last: ${last})${tail()}`);
}
