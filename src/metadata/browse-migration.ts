/**
 * Step 0004 of the schema (issue 28, the browse reads): what the JSON API and the web interface
 * sort and search by, kept by the database itself so the writers (metadata-index.ts, the
 * reconciler, pull counting) need not know of it.
 *
 * - repositories get their figures: `total_size` (its linked blobs' bytes, each once, plus its
 *   manifests' own bytes), `last_pushed_at` (the newest tag push it ever had; '' for none, so the
 *   column sorts without NULLs), `total_pulls` (the sum of its manifests' pull counts), `tag_count`;
 * - tags get `manifest_size` (their manifest's bytes), so a repository's tags sort by size from
 *   one index;
 * - `manifest_values`: each label and annotation of each manifest as a row (key and value cut to
 *   VALUE_CHARS, so the index holds them on PostgreSQL too), for prefix search by value.
 *
 * Triggers keep them (SQLite: plain triggers; PostgreSQL: PL/pgSQL functions), and this step
 * fills them for the rows already there. Indexes make every sort and search a range of one
 * index: a keyset page is as fast at the end of a list as at its start.
 */
import { sql, type Kysely, type Migration } from 'kysely';

/** characters of a label or annotation key and value the search index keeps */
export const VALUE_CHARS = 256;

const INDEXES = [
  'CREATE INDEX repositories_by_size ON repositories (total_size, name)',
  'CREATE INDEX repositories_by_pushed ON repositories (last_pushed_at, name)',
  'CREATE INDEX repositories_by_pulls ON repositories (total_pulls, name)',
  'CREATE INDEX tags_by_pushed ON tags (repository, pushed_at, name)',
  'CREATE INDEX tags_by_size ON tags (repository, manifest_size, name)',
  'CREATE INDEX tags_by_name ON tags (name, repository)',
  'CREATE INDEX manifest_values_by_value ON manifest_values (value, repository, digest)',
];

/** `text`: the type of a compared or sorted text column (byte order on PostgreSQL: migrations.ts, `textKey`) */
function columns(big: string, text: string): string[] {
  return [
    `ALTER TABLE repositories ADD COLUMN total_size ${big} NOT NULL DEFAULT 0`,
    `ALTER TABLE repositories ADD COLUMN last_pushed_at ${text} NOT NULL DEFAULT ''`,
    `ALTER TABLE repositories ADD COLUMN total_pulls ${big} NOT NULL DEFAULT 0`,
    `ALTER TABLE repositories ADD COLUMN tag_count ${big} NOT NULL DEFAULT 0`,
    `ALTER TABLE tags ADD COLUMN manifest_size ${big} NOT NULL DEFAULT 0`,
    `CREATE TABLE manifest_values (
      repository ${text} NOT NULL, digest ${text} NOT NULL, kind ${text} NOT NULL, key ${text} NOT NULL, value ${text} NOT NULL,
      PRIMARY KEY (repository, digest, kind, key))`,
  ];
}

/** the figures of the rows already there (same SQL on both engines) */
const BACKFILL = [
  `UPDATE repositories SET
    total_size = COALESCE((SELECT SUM(m.size) FROM manifests m WHERE m.repository = repositories.name), 0)
      + COALESCE((SELECT SUM(b.size) FROM repository_blobs rb JOIN blobs b ON b.digest = rb.digest WHERE rb.repository = repositories.name), 0),
    total_pulls = COALESCE((SELECT SUM(m.pull_count) FROM manifests m WHERE m.repository = repositories.name), 0),
    tag_count = (SELECT COUNT(*) FROM tags t WHERE t.repository = repositories.name),
    last_pushed_at = COALESCE((SELECT MAX(t.pushed_at) FROM tags t WHERE t.repository = repositories.name), '')`,
  `UPDATE tags SET manifest_size = COALESCE((SELECT m.size FROM manifests m WHERE m.repository = tags.repository AND m.digest = tags.digest), 0)`,
];

/**
 * a manifest's labels and annotations as manifest_values rows: `entries(json)` is the engine's
 * table function, `m` the manifest row (`new`, or `m` of `manifests m` when `table` is set)
 */
function valueRows(entries: (json: string) => string, m: string, table = ''): string {
  const from = (column: string) => `FROM ${table}${entries(`${m}.${column}`)} j`;
  return `SELECT ${m}.repository, ${m}.digest, 'label', substr(j.key, 1, ${VALUE_CHARS}), substr(j.value, 1, ${VALUE_CHARS}) ${from('labels')}
    UNION ALL SELECT ${m}.repository, ${m}.digest, 'annotation', substr(j.key, 1, ${VALUE_CHARS}), substr(j.value, 1, ${VALUE_CHARS}) ${from('annotations')}`;
}

const sqliteEntries = (json: string) => `json_each(${json})`;
const postgresEntries = (json: string) => `jsonb_each_text(${json}::jsonb)`;

const SQLITE_TRIGGERS = [
  `CREATE TRIGGER browse_tags_insert AFTER INSERT ON tags BEGIN
    UPDATE tags SET manifest_size = COALESCE((SELECT size FROM manifests WHERE repository = new.repository AND digest = new.digest), 0)
      WHERE repository = new.repository AND name = new.name;
    UPDATE repositories SET tag_count = tag_count + 1, last_pushed_at = max(last_pushed_at, new.pushed_at) WHERE name = new.repository;
  END`,
  `CREATE TRIGGER browse_tags_update AFTER UPDATE OF digest, pushed_at ON tags BEGIN
    UPDATE tags SET manifest_size = COALESCE((SELECT size FROM manifests WHERE repository = new.repository AND digest = new.digest), 0)
      WHERE repository = new.repository AND name = new.name AND new.digest <> old.digest;
    UPDATE repositories SET last_pushed_at = new.pushed_at WHERE name = new.repository AND last_pushed_at < new.pushed_at;
  END`,
  `CREATE TRIGGER browse_tags_delete AFTER DELETE ON tags BEGIN
    UPDATE repositories SET tag_count = tag_count - 1 WHERE name = old.repository;
  END`,
  `CREATE TRIGGER browse_manifests_insert AFTER INSERT ON manifests BEGIN
    UPDATE repositories SET total_size = total_size + new.size, total_pulls = total_pulls + new.pull_count WHERE name = new.repository;
    UPDATE tags SET manifest_size = new.size WHERE repository = new.repository AND digest = new.digest;
    INSERT OR IGNORE INTO manifest_values (repository, digest, kind, key, value) ${valueRows(sqliteEntries, 'new')};
  END`,
  `CREATE TRIGGER browse_manifests_figures AFTER UPDATE OF size, pull_count ON manifests WHEN new.size <> old.size OR new.pull_count <> old.pull_count BEGIN
    UPDATE repositories SET total_size = total_size + new.size - old.size, total_pulls = total_pulls + new.pull_count - old.pull_count WHERE name = new.repository;
    UPDATE tags SET manifest_size = new.size WHERE repository = new.repository AND digest = new.digest AND new.size <> old.size;
  END`,
  `CREATE TRIGGER browse_manifests_values AFTER UPDATE OF labels, annotations ON manifests WHEN new.labels <> old.labels OR new.annotations <> old.annotations BEGIN
    DELETE FROM manifest_values WHERE repository = new.repository AND digest = new.digest;
    INSERT OR IGNORE INTO manifest_values (repository, digest, kind, key, value) ${valueRows(sqliteEntries, 'new')};
  END`,
  `CREATE TRIGGER browse_manifests_delete AFTER DELETE ON manifests BEGIN
    UPDATE repositories SET total_size = total_size - old.size, total_pulls = total_pulls - old.pull_count WHERE name = old.repository;
    DELETE FROM manifest_values WHERE repository = old.repository AND digest = old.digest;
  END`,
  `CREATE TRIGGER browse_links_insert AFTER INSERT ON repository_blobs BEGIN
    UPDATE repositories SET total_size = total_size + COALESCE((SELECT size FROM blobs WHERE digest = new.digest), 0) WHERE name = new.repository;
  END`,
  `CREATE TRIGGER browse_links_delete AFTER DELETE ON repository_blobs BEGIN
    UPDATE repositories SET total_size = total_size - COALESCE((SELECT size FROM blobs WHERE digest = old.digest), 0) WHERE name = old.repository;
  END`,
  `CREATE TRIGGER browse_blobs_size AFTER UPDATE OF size ON blobs WHEN new.size <> old.size BEGIN
    UPDATE repositories SET total_size = total_size + new.size - old.size WHERE name IN (SELECT repository FROM repository_blobs WHERE digest = new.digest);
  END`,
];

const POSTGRES_TRIGGERS = [
  `CREATE FUNCTION browse_tag_size() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
    NEW.manifest_size := COALESCE((SELECT size FROM manifests WHERE repository = NEW.repository AND digest = NEW.digest), 0);
    RETURN NEW;
  END $$`,
  `CREATE TRIGGER browse_tag_size BEFORE INSERT OR UPDATE OF digest ON tags FOR EACH ROW EXECUTE FUNCTION browse_tag_size()`,
  `CREATE FUNCTION browse_tags() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
    IF TG_OP = 'DELETE' THEN
      UPDATE repositories SET tag_count = tag_count - 1 WHERE name = OLD.repository;
      RETURN OLD;
    END IF;
    IF TG_OP = 'INSERT' THEN
      UPDATE repositories SET tag_count = tag_count + 1 WHERE name = NEW.repository;
    END IF;
    UPDATE repositories SET last_pushed_at = NEW.pushed_at WHERE name = NEW.repository AND last_pushed_at < NEW.pushed_at;
    RETURN NEW;
  END $$`,
  `CREATE TRIGGER browse_tags AFTER INSERT OR DELETE OR UPDATE OF digest, pushed_at ON tags FOR EACH ROW EXECUTE FUNCTION browse_tags()`,
  `CREATE FUNCTION browse_manifests() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
    IF TG_OP = 'DELETE' THEN
      UPDATE repositories SET total_size = total_size - OLD.size, total_pulls = total_pulls - OLD.pull_count WHERE name = OLD.repository;
      DELETE FROM manifest_values WHERE repository = OLD.repository AND digest = OLD.digest;
      RETURN OLD;
    END IF;
    IF TG_OP = 'INSERT' THEN
      UPDATE repositories SET total_size = total_size + NEW.size, total_pulls = total_pulls + NEW.pull_count WHERE name = NEW.repository;
    ELSIF NEW.size <> OLD.size OR NEW.pull_count <> OLD.pull_count THEN
      UPDATE repositories SET total_size = total_size + NEW.size - OLD.size, total_pulls = total_pulls + NEW.pull_count - OLD.pull_count WHERE name = NEW.repository;
    END IF;
    IF TG_OP = 'INSERT' OR NEW.size <> OLD.size THEN
      UPDATE tags SET manifest_size = NEW.size WHERE repository = NEW.repository AND digest = NEW.digest;
    END IF;
    IF TG_OP = 'INSERT' OR NEW.labels <> OLD.labels OR NEW.annotations <> OLD.annotations THEN
      DELETE FROM manifest_values WHERE repository = NEW.repository AND digest = NEW.digest;
      INSERT INTO manifest_values (repository, digest, kind, key, value) ${valueRows(postgresEntries, 'NEW')} ON CONFLICT DO NOTHING;
    END IF;
    RETURN NEW;
  END $$`,
  `CREATE TRIGGER browse_manifests AFTER INSERT OR DELETE OR UPDATE ON manifests FOR EACH ROW EXECUTE FUNCTION browse_manifests()`,
  `CREATE FUNCTION browse_links() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
    IF TG_OP = 'INSERT' THEN
      UPDATE repositories SET total_size = total_size + COALESCE((SELECT size FROM blobs WHERE digest = NEW.digest), 0) WHERE name = NEW.repository;
      RETURN NEW;
    END IF;
    UPDATE repositories SET total_size = total_size - COALESCE((SELECT size FROM blobs WHERE digest = OLD.digest), 0) WHERE name = OLD.repository;
    RETURN OLD;
  END $$`,
  `CREATE TRIGGER browse_links AFTER INSERT OR DELETE ON repository_blobs FOR EACH ROW EXECUTE FUNCTION browse_links()`,
  `CREATE FUNCTION browse_blobs() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
    UPDATE repositories SET total_size = total_size + NEW.size - OLD.size WHERE name IN (SELECT repository FROM repository_blobs WHERE digest = NEW.digest);
    RETURN NEW;
  END $$`,
  `CREATE TRIGGER browse_blobs AFTER UPDATE OF size ON blobs FOR EACH ROW WHEN (NEW.size <> OLD.size) EXECUTE FUNCTION browse_blobs()`,
];

/** the step for PostgreSQL (`postgres`) or SQLite */
export function browseStep(postgres: boolean): Migration {
  const statements = [
    ...columns(postgres ? 'bigint' : 'integer', postgres ? 'text COLLATE "C"' : 'text'),
    ...BACKFILL,
    `INSERT INTO manifest_values (repository, digest, kind, key, value) SELECT * FROM (${valueRows(postgres ? postgresEntries : sqliteEntries, 'm', 'manifests m, ')}) v WHERE true ON CONFLICT DO NOTHING`,
    ...(postgres ? POSTGRES_TRIGGERS : SQLITE_TRIGGERS),
    ...INDEXES,
  ];
  return {
    async up(db: Kysely<any>) {
      for (const statement of statements) await sql.raw(statement).execute(db);
    },
  };
}
