/**
 * Step 0008 of the schema (issue 33, the audit log): `audit_log`, one row per record of
 * src/audit/record.ts. Unlike the other tables it is not derived from storage: a rebuild never
 * touches it, and its backup is the database's own (docs/security.md, "Audit log").
 *
 * `id` orders records written in the same millisecond and pages the web view by keyset; every
 * filter (repository, actor, action) has an index ending in time, so a filtered page newest first
 * is a range of one index, and retention deletes a range of `audit_by_time`.
 */
import { sql, type Kysely, type Migration } from 'kysely';

export function auditStep(postgres: boolean): Migration {
  const text = postgres ? 'text COLLATE "C"' : 'text';
  const id = postgres ? 'bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY' : 'integer PRIMARY KEY AUTOINCREMENT';
  const statements = [
    `CREATE TABLE audit_log (
      id ${id},
      at ${text} NOT NULL,
      actor ${text},
      address text,
      action ${text} NOT NULL,
      repository ${text},
      target text,
      outcome ${text} NOT NULL,
      detail text)`,
    'CREATE INDEX audit_by_time ON audit_log (at, id)',
    'CREATE INDEX audit_by_repository ON audit_log (repository, at, id)',
    'CREATE INDEX audit_by_actor ON audit_log (actor, at, id)',
    'CREATE INDEX audit_by_action ON audit_log (action, at, id)',
  ];
  return {
    async up(db: Kysely<any>) {
      for (const statement of statements) await sql.raw(statement).execute(db);
    },
  };
}
