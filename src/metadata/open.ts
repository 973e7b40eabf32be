/**
 * Opening the metadata database: embedded SQLite (better-sqlite3, a file on this machine) or
 * PostgreSQL (`pg`, a pool), one Kysely instance either way, migrated to the latest schema.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { Kysely, PostgresDialect, sql, SqliteDialect, type SqliteDatabase, type SqliteStatement } from 'kysely';
import { migrateToLatest, type Engine } from './migrations.js';
import type { Database } from './schema.js';

/** the pool of PostgreSQL connections an instance keeps; unset fields take POSTGRES_DEFAULTS */
export interface PostgresConnection {
  url: string;
  /** connections at most (each process of http.workers has its own pool) */
  poolSize?: number;
  /** how long opening a connection, or waiting for a free one, may take */
  connectTimeoutMs?: number;
  /** the server cancels a statement that runs longer (lock waits included); 0: no limit */
  statementTimeoutMs?: number;
}

export const POSTGRES_DEFAULTS = { poolSize: 10, connectTimeoutMs: 10_000, statementTimeoutMs: 60_000 } as const;

export type MetadataConnection = { sqlite: { path: string } } | { postgres: PostgresConnection };

export interface OpenedDatabase {
  db: Kysely<Database>;
  engine: Engine;
}

/** how long a SQLite writer waits for another process's transaction (http.workers share the file) */
export const SQLITE_BUSY_TIMEOUT_MS = 5000;

export async function openDatabase(connection: MetadataConnection): Promise<OpenedDatabase> {
  const opened = 'sqlite' in connection ? await openSqlite(connection.sqlite.path) : await openPostgres(connection.postgres);
  try {
    await migrate(opened);
  } catch (err) {
    await opened.db.destroy();
    throw err;
  }
  return opened;
}

/** how long a SQLite process waits for another one's migration (a large index's upgrade included) */
const SQLITE_MIGRATION_WAIT_MS = 10 * 60_000;

/**
 * Kysely's Migrator locks on PostgreSQL; on SQLite its lock is a no-op (it assumes one process),
 * and workers of http.workers open the file at once. So on SQLite every step runs inside one
 * `BEGIN IMMEDIATE` transaction (SQLite's DDL is transactional): one process migrates, all or
 * nothing, while the others wait for its write lock and then find every step applied.
 */
async function migrate({ db, engine }: OpenedDatabase): Promise<void> {
  if (engine !== 'sqlite') return migrateToLatest(db, engine);
  const deadline = Date.now() + SQLITE_MIGRATION_WAIT_MS;
  for (;;) {
    try {
      await sql`begin immediate`.execute(db);
      break;
    } catch (err) {
      // the busy timeout ran out while another process migrates: wait on
      if ((err as { code?: string }).code !== 'SQLITE_BUSY' || Date.now() > deadline) throw err;
    }
  }
  try {
    await migrateToLatest(db, engine);
    await sql`commit`.execute(db);
  } catch (err) {
    await sql`rollback`.execute(db).catch(() => undefined);
    throw err;
  }
}

async function openSqlite(path: string): Promise<OpenedDatabase> {
  const { default: SQLite } = await import('better-sqlite3');
  mkdirSync(dirname(path), { recursive: true });
  const database = new SQLite(path);
  // WAL: readers never wait for the writer, and the workers of http.workers write one at a time,
  // each waiting up to the busy timeout for the others' transactions
  database.pragma('journal_mode = WAL');
  database.pragma(`busy_timeout = ${SQLITE_BUSY_TIMEOUT_MS}`);
  // in WAL, NORMAL loses at most the last transactions on a power cut, never consistency; the
  // index is rebuildable from storage
  database.pragma('synchronous = NORMAL');
  return { db: new Kysely<Database>({ dialect: new SqliteDialect({ database: reusingStatements(database) }) }), engine: 'sqlite' };
}

/** statements kept prepared, by SQL text (the rebuild's batches and the request path repeat a few hundred shapes) */
const PREPARED_STATEMENTS = 500;

/**
 * Kysely prepares every query it runs again; preparing costs about as much as running a small
 * statement. A statement still being iterated (busy) is not handed out twice.
 */
function reusingStatements(database: SqliteDatabase): SqliteDatabase {
  const prepared = new Map<string, SqliteStatement & { busy?: boolean }>();
  return {
    close: () => database.close(),
    prepare(sql) {
      const known = prepared.get(sql);
      if (known && !known.busy) return known;
      const statement = database.prepare(sql);
      prepared.delete(sql);
      prepared.set(sql, statement);
      if (prepared.size > PREPARED_STATEMENTS) prepared.delete(prepared.keys().next().value!);
      return statement;
    },
  };
}

async function openPostgres(connection: PostgresConnection): Promise<OpenedDatabase> {
  const { default: pg } = await import('pg');
  const poolSize = connection.poolSize ?? POSTGRES_DEFAULTS.poolSize;
  const connectTimeoutMs = connection.connectTimeoutMs ?? POSTGRES_DEFAULTS.connectTimeoutMs;
  const statementTimeoutMs = connection.statementTimeoutMs ?? POSTGRES_DEFAULTS.statementTimeoutMs;
  const pool = new pg.Pool({
    connectionString: connection.url,
    max: poolSize,
    // without it a server that accepts the connection and never answers (a firewall, a full
    // backlog, the wrong port) holds start-up, and later every request, forever
    connectionTimeoutMillis: connectTimeoutMs,
    ...(statementTimeoutMs > 0 ? { statement_timeout: statementTimeoutMs } : {}),
  });
  // an idle connection the server or the network closed: the pool drops it and opens another
  // for the next query; unhandled, the error would end the process
  pool.on('error', () => undefined);
  // a bad URL, host or password is a start-up error, not the first push's
  const client = await pool.connect().catch(async (err: Error) => {
    await pool.end();
    const why = describe(err);
    const waited = /timeout/i.test(why) ? ` (no answer within metadata.postgres.connecttimeout, ${connectTimeoutMs / 1000} s)` : '';
    throw new Error(`cannot connect to PostgreSQL at ${serverOf(connection.url)}: ${why}${waited}`);
  });
  client.release();
  return { db: new Kysely<Database>({ dialect: new PostgresDialect({ pool }) }), engine: 'postgres' };
}

/** host:port/database of a connection URL, without its user and password */
function serverOf(url: string): string {
  try {
    const { hostname, port, pathname } = new URL(url);
    return `${hostname}:${port || 5432}${pathname}`;
  } catch {
    return 'metadata.postgres.url';
  }
}

/** pg's error, or the errors of each address tried (Node's AggregateError has no message of its own) */
function describe(err: Error): string {
  const inner = err instanceof AggregateError ? err.errors.map((e: Error) => e.message).join('; ') : '';
  return err.message || inner || String(err);
}
