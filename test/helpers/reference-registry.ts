// Start Debian's reference registry (CNCF Distribution, package `docker-registry`) for tests
// that compare berth with it or share a storage root with it.
//
//   const ref = await startReferenceRegistry({ deleteEnabled: true });
//   try { await fetch(`${ref.url}/v2/`) } finally { await ref.stop() }

import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { existsSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { freePort } from './ports.js';
import { cleanEnv, killPid, spawnLogged, waitForHttp, type LoggedProcess } from './processes.js';
import { assertTool, whichTool } from './tools.js';

export const REFERENCE_REGISTRY_BIN = '/usr/bin/docker-registry';

export interface ReferenceRegistryOptions {
  /** Storage root (filesystem driver). A fresh temp dir when not given. */
  rootdirectory?: string;
  /** Extra Distribution configuration, deep-merged over the generated one. */
  config?: object;
  /** storage.delete.enabled (default false, as in Distribution). */
  deleteEnabled?: boolean;
  /** Readiness deadline in milliseconds (default 15000). */
  timeoutMs?: number;
  /** what GET /v2/ answers once ready (default 200; 401 with auth configured) */
  readyStatus?: number;
}

export interface ReferenceRegistry {
  /** Base URL, e.g. http://127.0.0.1:41234 (no trailing slash). */
  url: string;
  port: number;
  pid: number;
  rootdirectory: string;
  /** Path of the generated config.yml. */
  configPath: string;
  /** Stop the registry: SIGTERM, SIGKILL after 3 s, resolve once it has exited. Idempotent. */
  stop(): Promise<void>;
  /** Everything the registry wrote to stdout/stderr so far. */
  logs(): string;
}

/** A fixed secret, so upload `_state` tokens are stable across restarts of one test. */
export const REFERENCE_HTTP_SECRET = 'berth-test-reference-registry-secret';

const running = new Set<LoggedProcess>();
const tempDirs = new Set<string>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const proc of running) {
      try {
        process.kill(proc.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
    for (const dir of tempDirs) {
      try {
        rmSync(dir, { recursive: true, force: true });
      } catch {
        // best effort
      }
    }
  });
}

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Deep merge: objects merge key by key, everything else from `over` replaces `base`. */
export function deepMerge(base: Record<string, unknown>, over: object): Record<string, unknown> {
  const out: Record<string, unknown> = { ...base };
  for (const [key, value] of Object.entries(over)) {
    const prev = out[key];
    out[key] = isPlainObject(prev) && isPlainObject(value) ? deepMerge(prev, value) : value;
  }
  return out;
}

/** The Distribution configuration used by startReferenceRegistry(). */
export function referenceRegistryConfig(opts: {
  rootdirectory: string;
  port: number;
  deleteEnabled?: boolean;
  config?: object;
}): Record<string, unknown> {
  const base: Record<string, unknown> = {
    version: '0.1',
    log: { level: 'info', formatter: 'text', fields: { service: 'registry' } },
    storage: {
      filesystem: { rootdirectory: opts.rootdirectory },
      delete: { enabled: opts.deleteEnabled ?? false },
      maintenance: { uploadpurging: { enabled: false } },
    },
    http: {
      addr: `127.0.0.1:${opts.port}`,
      secret: REFERENCE_HTTP_SECRET,
      // no http.debug section: the debug listener stays off
    },
  };
  return opts.config ? deepMerge(base, opts.config) : base;
}

export async function startReferenceRegistry(
  options: ReferenceRegistryOptions = {},
): Promise<ReferenceRegistry> {
  assertTool(existsSync(REFERENCE_REGISTRY_BIN) ? REFERENCE_REGISTRY_BIN : 'docker-registry', 'the reference registry');
  const bin = existsSync(REFERENCE_REGISTRY_BIN) ? REFERENCE_REGISTRY_BIN : whichTool('docker-registry')!;
  installExitHook();

  const configDir = await mkdtemp(join(tmpdir(), 'berth-refreg-conf-'));
  tempDirs.add(configDir);
  let rootdirectory = options.rootdirectory;
  if (rootdirectory === undefined) {
    rootdirectory = await mkdtemp(join(tmpdir(), 'berth-refreg-root-'));
    tempDirs.add(rootdirectory); // removed when the test process exits, so tests may inspect it after stop()
  }
  const configPath = join(configDir, 'config.yml');
  // Distribution ignores its config file for any REGISTRY_* variable set; drop them all, and
  // the CA-bundle variables (its S3 driver fails on an AWS_CA_BUNDLE it cannot read).
  const env = cleanEnv({ dropPrefixes: ['REGISTRY_'] });

  let lastError: Error | undefined;
  for (let attempt = 0; attempt < 3; attempt++) {
    const port = await freePort();
    const config = referenceRegistryConfig({
      rootdirectory,
      port,
      deleteEnabled: options.deleteEnabled,
      config: options.config,
    });
    await writeFile(configPath, stringify(config));
    const proc = await spawnLogged(bin, ['serve', configPath], { env, label: `docker-registry:${port}` });
    running.add(proc);
    void proc.exited.then(() => running.delete(proc));
    const url = `http://127.0.0.1:${port}`;
    try {
      await waitForHttp(`${url}/v2/`, {
        timeoutMs: options.timeoutMs ?? 15000,
        status: options.readyStatus,
        process: proc,
        name: `docker-registry (${configPath})`,
      });
    } catch (e) {
      await killPid(proc).catch(() => undefined);
      lastError = e as Error;
      if (/address already in use/i.test(proc.logs())) continue; // lost the port race; try another
      break;
    }
    let stopped: Promise<void> | undefined;
    return {
      url,
      port,
      pid: proc.pid,
      rootdirectory,
      configPath,
      logs: () => proc.logs(),
      stop: () => {
        stopped ??= (async () => {
          await killPid(proc, { graceMs: 3000 });
          running.delete(proc);
          await rm(configDir, { recursive: true, force: true });
          tempDirs.delete(configDir);
        })();
        return stopped;
      },
    };
  }
  await rm(configDir, { recursive: true, force: true });
  tempDirs.delete(configDir);
  throw lastError ?? new Error('docker-registry did not start');
}
