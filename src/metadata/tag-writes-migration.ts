/**
 * Step 0009 of the schema: lighter tag writes (the rebuild writes one row per tag, a million on
 * the bench's set; docs/performance.md, "Index rebuild", session 13).
 *
 * - `tags_by_digest` (0001: tags (repository, digest)) goes on both engines: it is a prefix of
 *   `tags_by_digest_name` (0006: tags (repository, digest, name)), which serves every query it
 *   served, and each tag write updated both.
 * - SQLite: a tag inserted with its manifest's figures already in the row (the rebuild knows its
 *   manifest: metadata-index.ts writes them) is not updated again by the insert triggers of steps
 *   0004 and 0006 (two updates of the row, six index entries rewritten). A row inserted without
 *   them (`media_type` NULL: every manifest has a media type) is filled by the triggers as before.
 *   PostgreSQL's triggers of those steps set the row before it is written (BEFORE), at no such
 *   cost: they stay.
 */
import { sql, type Kysely, type Migration } from 'kysely';

const SQLITE_TRIGGERS = [
  'DROP TRIGGER browse_tags_insert',
  `CREATE TRIGGER browse_tags_insert AFTER INSERT ON tags BEGIN
    UPDATE tags SET manifest_size = COALESCE((SELECT size FROM manifests WHERE repository = new.repository AND digest = new.digest), 0)
      WHERE repository = new.repository AND name = new.name AND new.media_type IS NULL;
    UPDATE repositories SET tag_count = tag_count + 1, last_pushed_at = max(last_pushed_at, new.pushed_at) WHERE name = new.repository;
  END`,
  'DROP TRIGGER figures_tags_insert',
  `CREATE TRIGGER figures_tags_insert AFTER INSERT ON tags WHEN new.media_type IS NULL BEGIN
    UPDATE tags SET (image_size, created, platform_names, media_type) = (SELECT image_size, created, platform_names, media_type FROM manifests m WHERE m.repository = tags.repository AND m.digest = tags.digest)
      WHERE repository = new.repository AND name = new.name;
  END`,
];

/** the step for PostgreSQL (`postgres`) or SQLite */
export function tagWritesStep(postgres: boolean): Migration {
  const statements = ['DROP INDEX tags_by_digest', ...(postgres ? [] : SQLITE_TRIGGERS)];
  return {
    async up(db: Kysely<any>) {
      for (const statement of statements) await sql.raw(statement).execute(db);
    },
  };
}
