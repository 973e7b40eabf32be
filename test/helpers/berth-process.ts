/**
 * Starts berth as a child process (`node --import tsx src/cli.ts serve <config>` from the repo
 * root), for tests that must measure the server's memory, kill it (SIGTERM or SIGKILL) and start
 * another one on the same storage root.
 *
 * The configuration is a YAML file in a temp dir: filesystem storage under `root` (a fresh temp dir
 * unless given), http.addr 127.0.0.1:<free port>, a fixed http.secret (so a restarted server accepts
 * the upload URLs of the previous one), log level warn, access log off; `config` is merged over it.
 * REGISTRY_* variables of the test environment are dropped so they cannot change the config.
 *
 * The child is registered with the exit guard of processes.ts, so a failing test never leaks it;
 * tests still call stop() in after()/finally.
 */
import { createHash, randomBytes } from 'node:crypto';
import { createReadStream, readFileSync, writeFileSync } from 'node:fs';
import { mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { request, type IncomingHttpHeaders } from 'node:http';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { stringify } from 'yaml';
import { merge, type Overrides } from './berth.js';
import { freePort } from './ports.js';
import { cleanEnv, killPid, spawnLogged, waitForHttp, type LoggedProcess } from './processes.js';
import { drained } from './backpressure.js';

export const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** the secret every child shares unless a test overrides http.secret */
export const CHILD_SECRET = 'berth-process-test-secret';

export interface BerthProcessOptions {
  /** storage root; when omitted a temp dir is created and removed by stop() */
  root?: string;
  /** storage.s3 parameters: the s3 driver instead of the filesystem (root is then unused) */
  s3?: Overrides;
  /** merged over the default configuration */
  config?: Overrides;
  /** extra environment variables for the child (undefined removes one) */
  env?: Record<string, string | undefined>;
  /** deadline for GET /v2/ to answer 200 (default 30 s) */
  startTimeoutMs?: number;
  /** what GET /v2/ answers once the server is up (401 with authentication; default 200) */
  readyStatus?: number;
  /** listen on this port (a restart behind a load balancer keeps its address); default a free one */
  port?: number;
}

export interface ExitStatus {
  code: number | null;
  signal: NodeJS.Signals | null;
}

export interface BerthProcess {
  url: string;
  pid: number;
  root: string;
  /** the YAML file the child was started with */
  configFile: string;
  /** SIGTERM (SIGKILL after a grace period), wait for exit, remove the temp config dir and an owned root; idempotent */
  stop(): Promise<ExitStatus>;
  /** SIGKILL and wait for exit; keeps the root (and the config) so another server can take over */
  kill9(): Promise<ExitStatus>;
  /** captured stdout + stderr */
  logs(): string;
  hasExited(): boolean;
  /** the child's memory from /proc/<pid>/status, in bytes */
  memory(): ProcessMemory;
  /** resets the peak (VmHWM) to the current RSS; false when the kernel refuses */
  resetPeak(): boolean;
}

export interface ProcessMemory {
  /** VmRSS: resident set size now */
  rss: number;
  /** VmHWM: peak resident set size since start or the last resetPeak() */
  hwm: number;
}

/** VmRSS and VmHWM of a process, from /proc/<pid>/status */
export function readProcessMemory(pid: number): ProcessMemory {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name: string): number => {
    const m = new RegExp(`^${name}:\\s+(\\d+)\\s+kB$`, 'm').exec(status);
    if (!m) throw new Error(`/proc/${pid}/status has no ${name}`);
    return Number(m[1]) * 1024;
  };
  return { rss: field('VmRSS'), hwm: field('VmHWM') };
}

/** writing 5 to clear_refs resets VmHWM to the current RSS (Linux >= 4.0) */
export function resetPeakRss(pid: number): boolean {
  try {
    writeFileSync(`/proc/${pid}/clear_refs`, '5');
    return true;
  } catch {
    return false;
  }
}

export async function startBerthProcess(options: BerthProcessOptions = {}): Promise<BerthProcess> {
  const ownsRoot = options.root === undefined;
  const root = options.root ?? (await mkdtemp(join(tmpdir(), 'berth-proc-root-')));
  const configDir = await mkdtemp(join(tmpdir(), 'berth-proc-config-'));
  const configFile = join(configDir, 'config.yml');
  const cleanup = async () => {
    await rm(configDir, { recursive: true, force: true });
    if (ownsRoot) await rm(root, { recursive: true, force: true });
  };

  // freePort() races with other processes until the child binds: retry on "address in use"
  let lastError: unknown;
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = options.port ?? (await freePort());
    const base: Overrides = {
      version: '0.1',
      log: { level: 'warn', accesslog: { disabled: true } },
      storage: { ...(options.s3 ? { s3: options.s3 } : { filesystem: { rootdirectory: root } }), delete: { enabled: true } },
      http: { addr: `127.0.0.1:${port}`, secret: CHILD_SECRET },
    };
    await writeFile(configFile, stringify(merge(base, options.config ?? {})));
    const proc = await spawnLogged(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'serve', configFile], {
      cwd: REPO_ROOT,
      env: cleanEnv({ dropPrefixes: ['REGISTRY_'], set: options.env ?? {} }),
      label: `berth:${port}`,
    });
    const url = `http://127.0.0.1:${port}`;
    try {
      await waitForHttp(`${url}/v2/`, { process: proc, timeoutMs: options.startTimeoutMs ?? 30_000, status: options.readyStatus, name: 'berth (child process)' });
      return handle(proc, url, root, configFile, cleanup);
    } catch (err) {
      lastError = err;
      await killPid(proc, { graceMs: 1000 }).catch(() => undefined);
      if (!/EADDRINUSE|address already in use/i.test(proc.logs())) break;
    }
  }
  await cleanup();
  throw lastError;
}

/** sends `sig`; false when the process is gone already */
function signalled(pid: number, sig: NodeJS.Signals): boolean {
  try {
    process.kill(pid, sig);
    return true;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ESRCH') return false;
    throw err;
  }
}

function handle(proc: LoggedProcess, url: string, root: string, configFile: string, cleanup: () => Promise<void>): BerthProcess {
  let cleaned = false;
  return {
    url,
    pid: proc.pid,
    root,
    configFile,
    async stop() {
      try {
        // SIGTERM and up to 5 s for a graceful exit, then killPid's SIGKILL. (killPid alone would do,
        // but its grace timer is not cleared when the process exits early and keeps the test
        // process alive for the whole grace period.)
        if (!proc.hasExited() && signalled(proc.pid, 'SIGTERM')) {
          let timer: NodeJS.Timeout | undefined;
          const graceful = await Promise.race([
            proc.exited.then(() => true),
            new Promise<boolean>((resolve) => {
              timer = setTimeout(() => resolve(false), 5000);
            }),
          ]);
          clearTimeout(timer);
          if (!graceful) await killPid(proc, { graceMs: 0 });
        }
        return await proc.exited;
      } finally {
        if (!cleaned) {
          cleaned = true;
          await cleanup();
        }
      }
    },
    async kill9() {
      if (!proc.hasExited()) signalled(proc.pid, 'SIGKILL');
      const timeout = new Promise<never>((_, reject) => {
        const timer = setTimeout(() => reject(new Error(`berth ${proc.pid} did not exit within 10 s of SIGKILL`)), 10_000);
        timer.unref();
      });
      return Promise.race([proc.exited, timeout]);
    },
    logs: () => proc.logs(),
    hasExited: () => proc.hasExited(),
    memory: () => readProcessMemory(proc.pid),
    resetPeak: () => resetPeakRss(proc.pid),
  };
}

// ---------------------------------------------------------------------------------------------
// Large blobs without holding them: deterministic content generated chunk by chunk, and HTTP
// requests that stream it (with backpressure) and hash what they receive.

export const MiB = 1024 * 1024;
const CHUNK = MiB;

/** one random MiB per test process; every blob's chunks are variations of it */
let baseChunk: Buffer | undefined;

/**
 * `size` bytes of reproducible content: chunk i (1 MiB) is a shared random MiB with the blob's seed
 * and i written over its start, so any range can be regenerated (to resume, to compare) and two
 * blobs with different seeds differ. Chunks are fresh buffers: a queued write never sees a later one.
 */
export class PatternBlob {
  readonly seed: bigint;
  private readonly digests = new Map<string, string>();

  constructor(readonly size: number, seed?: bigint) {
    baseChunk ??= randomBytes(CHUNK);
    this.seed = seed ?? randomBytes(8).readBigUInt64LE(0);
  }

  private chunk(index: number): Buffer {
    const length = Math.min(CHUNK, this.size - index * CHUNK);
    const out = Buffer.allocUnsafe(length);
    baseChunk!.copy(out, 0, 0, length);
    const stamp = Buffer.alloc(16);
    stamp.writeBigUInt64LE(this.seed, 0);
    stamp.writeBigUInt64LE(BigInt(index), 8);
    stamp.copy(out, 0, 0, Math.min(16, length));
    if (length > 32) stamp.copy(out, length - 16, 0, 16);
    return out;
  }

  /** bytes [start, end) in pieces of at most 1 MiB */
  *chunks(start = 0, end = this.size): Generator<Buffer> {
    for (let pos = start; pos < end; ) {
      const index = Math.floor(pos / CHUNK);
      const chunk = this.chunk(index);
      const from = pos - index * CHUNK;
      const to = Math.min(chunk.length, end - index * CHUNK);
      yield from === 0 && to === chunk.length ? chunk : chunk.subarray(from, to);
      pos += to - from;
    }
  }

  /** the whole content in memory (for small blobs only) */
  bytes(start = 0, end = this.size): Buffer {
    return Buffer.concat([...this.chunks(start, end)]);
  }

  /** the digest of the whole content, sha256 unless told (computed once per algorithm, by generating it) */
  digest(algorithm: 'sha256' | 'sha512' = 'sha256'): string {
    let digest = this.digests.get(algorithm);
    if (!digest) {
      const hash = createHash(algorithm);
      for (const chunk of this.chunks()) hash.update(chunk);
      digest = `${algorithm}:${hash.digest('hex')}`;
      this.digests.set(algorithm, digest);
    }
    return digest;
  }
}

export interface StreamResult {
  status: number;
  headers: IncomingHttpHeaders;
  /** the response body (small responses only: errors, empty bodies) */
  body: string;
  /** body bytes written to the socket */
  sent: number;
  /** sha256 of what was sent */
  sentDigest: string;
  /** wall time of the request in ms */
  ms: number;
}

export interface StreamRequestOptions {
  method: string;
  headers?: Record<string, string | number>;
  /** streamed with backpressure; chunked unless headers carry content-length */
  body?: Iterable<Buffer> | AsyncIterable<Buffer>;
  /** overall deadline (default 120 s) */
  timeoutMs?: number;
  /** called once the whole request (headers and body) has been handed to the OS */
  onSent?: () => void;
}

/**
 * A request whose body is streamed from `body` (never held whole), hashing it on the way out.
 * One connection per request (no keep-alive): a server stopped right after a streamed response
 * must not wait for an idle client connection to time out (see the robustness report).
 */
export function streamRequest(url: string | URL, options: StreamRequestOptions): Promise<StreamResult> {
  const started = Date.now();
  const hash = createHash('sha256');
  let sent = 0;
  return new Promise<StreamResult>((resolve, reject) => {
    let failed = false;
    const fail = (err: Error) => {
      if (failed) return;
      failed = true;
      req.destroy();
      reject(err);
    };
    const req = request(url, { method: options.method, agent: false, headers: { 'content-type': 'application/octet-stream', ...(options.headers ?? {}) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', fail);
      res.on('end', () => {
        clearTimeout(timer);
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString(), sent, sentDigest: `sha256:${hash.digest('hex')}`, ms: Date.now() - started });
      });
    });
    const timer = setTimeout(() => fail(new Error(`${options.method} ${url}: no answer within ${options.timeoutMs ?? 120_000} ms (${sent} bytes sent)`)), options.timeoutMs ?? 120_000);
    timer.unref();
    req.on('error', (err) => {
      clearTimeout(timer);
      fail(err);
    });
    if (options.onSent) req.once('finish', options.onSent);
    (async () => {
      if (options.body) {
        for await (const chunk of options.body) {
          if (failed) return;
          hash.update(chunk);
          sent += chunk.length;
          if (!req.write(chunk)) await drained(req);
        }
      }
      if (!failed) req.end();
    })().catch((err: Error) => fail(err));
  });
}

export interface DownloadResult {
  status: number;
  headers: IncomingHttpHeaders;
  size: number;
  digest: string;
  ms: number;
}

/** GET (or HEAD) `url` on its own connection, hashing the body as it arrives instead of keeping it */
export function streamDownload(url: string | URL, method: 'GET' | 'HEAD' = 'GET', timeoutMs = 120_000): Promise<DownloadResult> {
  const started = Date.now();
  return new Promise<DownloadResult>((resolve, reject) => {
    const req = request(url, { method, agent: false }, (res) => {
      const hash = createHash('sha256');
      let size = 0;
      res.on('data', (c: Buffer) => {
        hash.update(c);
        size += c.length;
      });
      res.on('error', reject);
      res.on('end', () => {
        clearTimeout(timer);
        resolve({ status: res.statusCode ?? 0, headers: res.headers, size, digest: `sha256:${hash.digest('hex')}`, ms: Date.now() - started });
      });
    });
    const timer = setTimeout(() => {
      req.destroy();
      reject(new Error(`${method} ${url}: not done within ${timeoutMs} ms`));
    }, timeoutMs);
    timer.unref();
    req.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    req.end();
  });
}

/** `Range: 0-<last>` of an upload status response as the number of bytes it holds */
export function rangeSize(range: string | string[] | undefined): number {
  const m = /^0-(\d+)$/.exec(String(range));
  if (!m) throw new Error(`unexpected upload Range header ${JSON.stringify(range)}`);
  // 0-0 is both "empty" and "one byte" on the wire; the tests never resume from a 1-byte upload
  return Number(m[1]) === 0 ? 0 : Number(m[1]) + 1;
}

/** every file under <root>/docker/registry/v2/blobs, relative to that directory */
export async function blobFiles(root: string): Promise<string[]> {
  const dir = join(root, 'docker/registry/v2/blobs');
  try {
    const entries = await readdir(dir, { recursive: true, withFileTypes: true });
    return entries.filter((e) => e.isFile()).map((e) => relative(dir, join(e.parentPath ?? e.path, e.name))).sort();
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
}

/** sha256 of a file, streamed */
export async function fileDigest(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return `sha256:${hash.digest('hex')}`;
}

/**
 * Checks that every file under blobs/ is `sha256/<2 hex>/<hex>/data` whose content hashes to <hex>.
 * Returns the hex digests found; throws listing every misplaced or corrupt file.
 */
export async function verifyBlobStore(root: string): Promise<string[]> {
  const problems: string[] = [];
  const found: string[] = [];
  for (const file of await blobFiles(root)) {
    const m = /^sha256\/([0-9a-f]{2})\/([0-9a-f]{64})\/data$/.exec(file);
    if (!m || !m[2].startsWith(m[1])) {
      problems.push(`unexpected file blobs/${file}`);
      continue;
    }
    const actual = await fileDigest(join(root, 'docker/registry/v2/blobs', file));
    if (actual !== `sha256:${m[2]}`) problems.push(`blobs/${file} holds content with digest ${actual}`);
    else found.push(m[2]);
  }
  if (problems.length > 0) throw new Error(`corrupt blob store under ${root}:\n  ${problems.join('\n  ')}`);
  return found;
}
