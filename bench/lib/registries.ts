/**
 * The two registries under test, as child processes on 127.0.0.1: berth (compiled,
 * `node .tmp/bench-bundle/cli.js serve`) and CNCF Distribution 2.8 (Debian's docker-registry), each
 * on its own storage: a filesystem root each, or a key prefix each (storage.s3.rootdirectory) of
 * one bucket of the S3 store. Both run without per-request logging (berth: access log off, level
 * warn; Distribution: access log off, level warn), so neither pays for log lines the other skips.
 */
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { REPO_ROOT } from '../../test/helpers/berth-process.js';
import { freePort } from '../../test/helpers/ports.js';
import { cleanEnv, killPid, spawnLogged, waitForHttp } from '../../test/helpers/processes.js';
import { REFERENCE_REGISTRY_BIN, startReferenceRegistry } from '../../test/helpers/reference-registry.js';
import { removePushed } from './fixtures.js';
import type { S3Prefix, S3Store } from './s3.js';

export type RegistryName = 'berth' | 'distribution';

export interface Registry {
  name: RegistryName;
  url: string;
  /** host:port, for skopeo */
  host: string;
  pid: number;
  backend: Backend;
  stop(): Promise<void>;
  logs(): string;
}

/** where a registry keeps its data */
export interface Backend {
  kind: 'filesystem' | 's3';
  /** the storage section of the configuration, without delete and maintenance (the same for both registries) */
  storage: Record<string, unknown>;
  /** removes a pushed repository and its blobs, so the next push starts clean */
  removePushed(repo: string, digests: string[]): Promise<void>;
}

export function filesystemBackend(root: string): Backend {
  return {
    kind: 'filesystem',
    storage: { filesystem: { rootdirectory: root } },
    removePushed: (repo, digests) => removePushed(root, repo, digests),
  };
}

/** S3 part size of both registries (both default to 10 MiB; set explicitly so they stay equal) */
export const S3_CHUNK_SIZE = 10 * 1024 * 1024;

/**
 * storage.s3 on the prefix `prefix` of the store's bucket; `redirect: false` sets
 * storage.redirect.disable (the registry streams blob bytes instead of answering 307)
 */
export function s3Backend(store: S3Store, prefix: S3Prefix, redirect: boolean): Backend {
  return {
    kind: 's3',
    storage: {
      s3: { ...store.ceph.params(store.bucket, { rootdirectory: prefix.rootdirectory }), v4auth: true, chunksize: S3_CHUNK_SIZE },
      redirect: { disable: !redirect },
    },
    removePushed: (repo, digests) => prefix.removePushed(repo, digests),
  };
}

export interface StartOptions {
  /** write a V8 CPU profile of berth (node --cpu-prof) into this directory when it exits */
  cpuProfileDir?: string;
  /** run src/ through tsx (as the tests do) instead of the compiled JavaScript */
  fromSource?: boolean;
  /** more top-level configuration (e.g. `proxy`) */
  config?: Record<string, unknown>;
}

/**
 * Compiles berth (tsc -p tsconfig.build.json) into .tmp/bench-dist of the repository and bundles it
 * into .tmp/bench-bundle (src/server-bundle.ts), so it runs
 * as it does in production (`npm run build`, `berth serve`), without tsx's loader in the process.
 * Inside the repository, so the compiled modules find node_modules.
 */
export function buildBerth(): string {
  const outDir = join(REPO_ROOT, '.tmp', 'bench-dist');
  rmSync(outDir, { recursive: true, force: true });
  execFileSync(process.execPath, [join(REPO_ROOT, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', 'tsconfig.build.json', '--outDir', outDir], { cwd: REPO_ROOT, stdio: 'inherit' });
  // bundled as `npm run build` bundles it (src/server-bundle.ts): what `berth` and `npm start` run
  const bundleDir = join(REPO_ROOT, '.tmp', 'bench-bundle');
  execFileSync(process.execPath, [join(outDir, 'server-bundle.js'), bundleDir], { cwd: REPO_ROOT, stdio: 'inherit' });
  return join(bundleDir, 'cli.js');
}

/** BENCH_WORKERS=N: berth runs N worker processes (http.workers), to compare with one */
function workers(): Record<string, unknown> {
  return process.env.BENCH_WORKERS ? { workers: process.env.BENCH_WORKERS } : {};
}

/**
 * BENCH_RECORD_PULLS=1: berth records last-pull times (a retention policy with notpulledfor, the
 * scheduled pass off), to measure what recording costs the pull path (docs/decisions.md)
 */
function recordPulls(): Record<string, unknown> {
  if (process.env.BENCH_RECORD_PULLS !== '1') return {};
  return { retention: { enabled: false, policies: [{ repositories: ['**'], delete: { notpulledfor: '720h' } }] } };
}

export async function startBerth(backend: Backend, cli: string | undefined, options: StartOptions = {}): Promise<Registry> {
  const configDir = await mkdtemp(join(tmpdir(), 'berth-bench-config-'));
  const configFile = join(configDir, 'config.yml');
  const nodeArgs = [...(process.env.BENCH_NODE_ARGS ? process.env.BENCH_NODE_ARGS.split(' ') : []), ...(options.cpuProfileDir ? ['--cpu-prof', `--cpu-prof-dir=${options.cpuProfileDir}`] : [])];
  const args = cli && !options.fromSource ? [...nodeArgs, cli] : [...nodeArgs, '--import', 'tsx', 'src/cli.ts'];
  let lastError: unknown;
  try {
    // freePort() races with other processes until the child binds: retry on "address in use"
    for (let attempt = 0; attempt < 3; attempt++) {
      const port = await freePort();
      await writeFile(
        configFile,
        stringify({
          version: '0.1',
          log: { level: 'warn', accesslog: { disabled: true } },
          storage: { ...backend.storage, delete: { enabled: true }, maintenance: { uploadpurging: { enabled: false }, ...recordPulls() } },
          http: { addr: `127.0.0.1:${port}`, secret: 'berth-bench-secret', ...workers() },
          ...options.config,
        }),
      );
      const proc = await spawnLogged(process.execPath, [...args, 'serve', configFile], {
        cwd: REPO_ROOT,
        env: cleanEnv({ dropPrefixes: ['REGISTRY_'] }),
        label: `berth:${port}`,
      });
      const url = `http://127.0.0.1:${port}`;
      try {
        await waitForHttp(`${url}/v2/`, { process: proc, timeoutMs: 30_000, name: 'berth' });
      } catch (err) {
        lastError = err;
        await killPid(proc, { graceMs: 1000 }).catch(() => undefined);
        if (/EADDRINUSE|address already in use/i.test(proc.logs())) continue;
        break;
      }
      let stopped: Promise<void> | undefined;
      return {
        name: 'berth',
        url,
        host: new URL(url).host,
        pid: proc.pid,
        backend,
        logs: () => proc.logs(),
        // SIGTERM lets berth drain and exit (writing the CPU profile); SIGKILL after 15 s
        stop: () => (stopped ??= killPid(proc, { graceMs: 15_000 }).finally(() => rm(configDir, { recursive: true, force: true }))),
      };
    }
  } catch (err) {
    lastError = err;
  }
  await rm(configDir, { recursive: true, force: true });
  throw lastError;
}

/** `config`: more top-level configuration (e.g. `proxy`) */
export async function startDistribution(backend: Backend, config: Record<string, unknown> = {}): Promise<Registry> {
  const fs = backend.storage.filesystem as { rootdirectory: string } | undefined;
  // startReferenceRegistry runs it without the CA-bundle variables (its S3 driver fails on an
  // AWS_CA_BUNDLE it cannot read) and without REGISTRY_* variables
  const ref = await startReferenceRegistry({
    rootdirectory: fs?.rootdirectory,
    config: {
      log: { level: 'warn', accesslog: { disabled: true } },
      storage: { ...(fs ? {} : { filesystem: undefined }), ...backend.storage },
      ...config,
    },
  });
  return {
    name: 'distribution',
    url: ref.url,
    host: new URL(ref.url).host,
    pid: ref.pid,
    backend,
    logs: () => ref.logs(),
    stop: () => ref.stop(),
  };
}

export function distributionVersion(): string {
  try {
    return execFileSync(REFERENCE_REGISTRY_BIN, ['--version'], { encoding: 'utf8' }).trim();
  } catch {
    return 'unknown';
  }
}
