/**
 * Step 0007 of the schema (issue 29, API tokens): the robot accounts' records. Unlike the rest of
 * the index they cannot be rebuilt from storage; their backup is the database's own.
 *
 * `repositories` and `actions` are JSON arrays (globs; `pull`/`push`/`delete`), `owner_groups` a
 * JSON array or NULL. Times are ISO-8601 text in UTC; `expires_at`, `revoked_at`, `last_used_at`
 * NULL for never. Only a SHA-256 of the secret is kept (docs/decisions.md, "API tokens").
 */
import { sql, type Kysely, type Migration } from 'kysely';

export function apiTokensStep(postgres: boolean): Migration {
  const text = postgres ? 'text COLLATE "C"' : 'text';
  return {
    async up(db: Kysely<any>) {
      await sql
        .raw(
          `CREATE TABLE api_tokens (
            name ${text} PRIMARY KEY,
            secret_hash text NOT NULL,
            repositories text NOT NULL,
            actions text NOT NULL,
            owner ${text},
            owner_groups text,
            created_at ${text} NOT NULL,
            expires_at ${text},
            revoked_at ${text},
            last_used_at ${text})`,
        )
        .execute(db);
      await sql.raw('CREATE INDEX api_tokens_by_owner ON api_tokens (owner, name)').execute(db);
    },
  };
}
