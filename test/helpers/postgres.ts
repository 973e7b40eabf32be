/**
 * A private PostgreSQL cluster for one test file: Debian's binaries (/usr/lib/postgresql/<v>/bin),
 * initdb on a temp directory owned by the `postgres` user (initdb refuses to run as root),
 * the server on a free port of 127.0.0.1 with its socket in that directory, stopped by PID in
 * `after` (and SIGKILLed at exit by processes.ts's guard). Skipped loudly when the binaries are
 * missing; under CI=true a missing binary fails (tools.ts).
 */
import { execFileSync } from 'node:child_process';
import { chownSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { freePort } from './ports.js';
import { killPid, spawnLogged, type LoggedProcess } from './processes.js';
import { needTool, ToolMissingError } from './tools.js';

const DEBIAN_ROOT = '/usr/lib/postgresql';

/** the directory of Debian's newest PostgreSQL binaries, if installed */
export function postgresBin(): string | undefined {
  if (!existsSync(DEBIAN_ROOT)) return undefined;
  const versions = readdirSync(DEBIAN_ROOT).filter((v) => /^\d+$/.test(v)).sort((a, b) => Number(b) - Number(a));
  return versions.map((v) => join(DEBIAN_ROOT, v, 'bin')).find((bin) => existsSync(join(bin, 'initdb')) && existsSync(join(bin, 'postgres')));
}

/** node:test options: run, or skip loudly (fail under CI=true) without the binaries */
export function needPostgres(): { skip: string | false } {
  return postgresBin() ? { skip: false } : needTool(`${DEBIAN_ROOT}/15/bin/postgres`, 'the metadata index on PostgreSQL (apt-get install -y postgresql)');
}

export interface TestPostgres {
  /** a connection URL for `database` (default `postgres`) */
  url(database?: string): string;
  /**
   * a new empty database; its URL. `icuLocale` (e.g. `en-US`): the database's default collation
   * is that ICU locale's, as on a server initialised with a language's locale (the cluster's own is C)
   */
  createDatabase(name: string, options?: { icuLocale?: string }): Promise<string>;
  process: LoggedProcess;
  stop(): Promise<void>;
}

/** the uid and gid of the `postgres` user when this process is root (initdb and the server refuse root) */
function runAs(): { uid: number; gid: number } | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
  const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
  return { uid, gid };
}

export async function startPostgres(): Promise<TestPostgres> {
  const bin = postgresBin();
  if (!bin) throw new ToolMissingError(`${DEBIAN_ROOT}/15/bin/postgres`, 'the metadata index on PostgreSQL (apt-get install -y postgresql)');
  const dir = mkdtempSync(join(tmpdir(), 'berth-pg-'));
  const data = join(dir, 'data');
  const sockets = join(dir, 'sockets');
  mkdirSync(sockets);
  const user = runAs();
  if (user) for (const path of [dir, sockets]) chownSync(path, user.uid, user.gid);
  const initdb = [join(bin, 'initdb'), '-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8', '--locale', 'C'];
  try {
    if (user) execFileSync('runuser', ['-u', 'postgres', '--', ...initdb], { stdio: 'pipe' });
    else execFileSync(initdb[0], initdb.slice(1), { stdio: 'pipe' });
  } catch (err) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`initdb failed: ${(err as { stderr?: Buffer }).stderr?.toString() ?? err}`);
  }
  for (let attempt = 0; ; attempt++) {
    const port = await freePort();
    // fsync off: a test cluster is thrown away
    const proc = await spawnLogged(join(bin, 'postgres'), ['-D', data, '-p', String(port), '-k', sockets, '-h', '127.0.0.1', '-F', '-c', 'max_connections=50'], { label: 'postgres', ...(user ?? {}) });
    const url = (database = 'postgres') => `postgres://postgres@127.0.0.1:${port}/${database}`;
    const stop = async () => {
      await killPid(proc, { graceMs: 5000 });
      rmSync(dir, { recursive: true, force: true });
    };
    if (await ready(url(), proc)) {
      return {
        url,
        process: proc,
        stop,
        async createDatabase(name, options = {}) {
          const client = new pg.Client({ connectionString: url() });
          await client.connect();
          try {
            const locale = options.icuLocale ? ` TEMPLATE template0 LOCALE_PROVIDER icu ICU_LOCALE '${options.icuLocale}' LOCALE 'C.UTF-8'` : '';
            await client.query(`CREATE DATABASE "${name}"${locale}`);
          } finally {
            await client.end();
          }
          return url(name);
        },
      };
    }
    await killPid(proc);
    if (attempt >= 2) {
      rmSync(dir, { recursive: true, force: true });
      throw new Error(`postgres did not start on port ${port}:\n${proc.logs()}`);
    }
  }
}

async function ready(url: string, proc: LoggedProcess): Promise<boolean> {
  const deadline = Date.now() + 15_000;
  while (Date.now() < deadline && !proc.hasExited()) {
    const client = new pg.Client({ connectionString: url });
    try {
      await client.connect();
      await client.end();
      return true;
    } catch {
      await client.end().catch(() => undefined);
      await sleep(50);
    }
  }
  return false;
}
