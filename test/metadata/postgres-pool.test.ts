/**
 * PostgreSQL for the index: the pool's settings (metadata.postgres.poolsize, connecttimeout,
 * statementtimeout) reach the connections, and a server that cannot be reached stops `berth
 * serve` at start-up with one line naming the key and the server (never the password): refused
 * at once, or, when the server accepts and never answers, after connecttimeout instead of never.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { sql } from 'kysely';
import pg from 'pg';
import { stringify } from 'yaml';
import { validateConfig } from '../../src/config/load.js';
import { openMetadataIndex } from '../../src/features/metadata.js';
import { freePort } from '../helpers/ports.js';
import { needPostgres, startPostgres, type TestPostgres } from '../helpers/postgres.js';

const run = promisify(execFile);
const CLI = join(import.meta.dirname, '../../src/cli.ts');

describe('berth serve with an unreachable PostgreSQL', () => {
  let dir: string;
  let silent: Server;
  const sockets: Socket[] = [];
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'berth-pg-unreachable-'));
    // accepts connections and never answers, as a firewall's black hole or a wrong service does
    silent = createServer((socket) => sockets.push(socket));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  });
  after(async () => {
    for (const socket of sockets) socket.destroy();
    await new Promise((resolve) => silent.close(resolve));
    await rm(dir, { recursive: true, force: true });
  });

  /** `berth serve` on a config whose index is `postgres`; its exit code, stderr and how long it took */
  const serve = async (postgres: Record<string, unknown>) => {
    const file = join(dir, `config-${Math.random().toString(36).slice(2)}.yml`);
    await writeFile(file, stringify({ version: '0.1', storage: { filesystem: { rootdirectory: join(dir, 'root') } }, http: { addr: `127.0.0.1:${await freePort()}` }, metadata: { postgres } }));
    const started = performance.now();
    const result = await run(process.execPath, ['--import', 'tsx', CLI, 'serve', file], { timeout: 30_000 }).then(
      () => ({ code: 0, stderr: '', signal: null }),
      (err: { code: number | null; stderr: string; signal: string | null }) => ({ code: err.code, stderr: err.stderr, signal: err.signal }),
    );
    return { ...result, seconds: (performance.now() - started) / 1000 };
  };

  it('a refused connection: exit 1 with the key and the server, without the password', async () => {
    const port = await freePort();
    const { code, stderr } = await serve({ url: `postgres://berth:hunter2@127.0.0.1:${port}/berth` });
    assert.equal(code, 1);
    assert.match(stderr, new RegExp(`metadata\\.postgres\\.url: cannot open the metadata database: cannot connect to PostgreSQL at 127\\.0\\.0\\.1:${port}/berth: connect ECONNREFUSED`));
    assert.doesNotMatch(stderr, /hunter2/);
  });

  it('a server that accepts and never answers: exit 1 after metadata.postgres.connecttimeout, not a start-up that never ends', async () => {
    const { port } = silent.address() as { port: number };
    const { code, stderr, signal, seconds } = await serve({ url: `postgres://berth:hunter2@127.0.0.1:${port}/berth`, connecttimeout: '300ms' });
    assert.equal(signal, null, 'berth was still starting when the test gave up');
    assert.equal(code, 1);
    assert.match(stderr, new RegExp(`cannot connect to PostgreSQL at 127\\.0\\.0\\.1:${port}/berth: .*timeout.* \\(no answer within metadata\\.postgres\\.connecttimeout, 0\\.3 s\\)`, 'i'));
    assert.ok(seconds < 20, `${seconds} s`);
  });
});

describe('the PostgreSQL pool settings', needPostgres(), () => {
  let postgres: TestPostgres;
  before(async () => {
    postgres = await startPostgres();
  });
  after(() => postgres?.stop());

  const open = async (settings: Record<string, unknown>) => {
    const url = await postgres.createDatabase(`pool_${Math.random().toString(36).slice(2, 8)}`);
    return openMetadataIndex(validateConfig({ version: '0.1', storage: { inmemory: {} }, metadata: { postgres: { url, ...settings } } }, 'test'));
  };

  it('a statement longer than statementtimeout is cancelled by the server; the default is 60 s; "0s" is none', async () => {
    const short = await open({ statementtimeout: '100ms' });
    try {
      await assert.rejects(sql`select pg_sleep(0.5)`.execute(short.db), /statement timeout/);
      assert.deepEqual((await sql<{ statement_timeout: string }>`show statement_timeout`.execute(short.db)).rows, [{ statement_timeout: '100ms' }]);
    } finally {
      await short.close();
    }
    for (const [settings, shown] of [
      [{}, '1min'],
      [{ statementtimeout: '0s' }, '0'],
    ] as const) {
      const index = await open(settings);
      try {
        assert.deepEqual((await sql<{ statement_timeout: string }>`show statement_timeout`.execute(index.db)).rows, [{ statement_timeout: shown }], JSON.stringify(settings));
      } finally {
        await index.close();
      }
    }
  });

  it('connections the server closes while idle (a restart, an administrator) are replaced, not a crash of the process', async () => {
    const index = await open({ poolsize: 3 });
    const admin = new pg.Client({ connectionString: postgres.url() });
    await admin.connect();
    try {
      await Promise.all(Array.from({ length: 3 }, () => sql`select pg_sleep(0.02)`.execute(index.db)));
      const [{ db }] = (await sql<{ db: string }>`select current_database() as db`.execute(index.db)).rows;
      const { rows } = await admin.query<{ killed: boolean }>('select pg_terminate_backend(pid) as killed from pg_stat_activity where datname = $1', [db]);
      assert.ok(rows.length >= 1 && rows.every((r) => r.killed));
      // the idle connections learn it from the socket's end; the pool drops them
      await new Promise((resolve) => setTimeout(resolve, 100));
      assert.deepEqual((await sql<{ one: number }>`select 1 as one`.execute(index.db)).rows, [{ one: 1 }]);
      await index.tagMoved('after/restart', 'v1', `sha256:${'2'.repeat(64)}`);
      assert.deepEqual(await index.repositoryNames(), ['after/restart']);
    } finally {
      await admin.end();
      await index.close();
    }
  });

  it('poolsize bounds the connections one process opens', async () => {
    const index = await open({ poolsize: 2 });
    try {
      const rows = await Promise.all(Array.from({ length: 6 }, () => sql<{ pid: number }>`select pg_backend_pid() as pid, pg_sleep(0.05)`.execute(index.db)));
      assert.equal(new Set(rows.map((r) => r.rows[0].pid)).size, 2);
    } finally {
      await index.close();
    }
  });
});
