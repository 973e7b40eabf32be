/**
 * Step 0006 of the schema (issue 28, the tag list sorted by any column): each manifest's image
 * figures as the web interface shows them (`image_size`: config + layers, an index its children's;
 * `created`: the build time; `platform_names`: its platforms as listed), written by the core when
 * it describes the manifest (registry/indexing/image-figures.ts), and copied onto each tag with
 * its manifest's media type by triggers (as step 0004 keeps `tags.manifest_size`), so a
 * repository's tags sort by each from one index: a keyset page is one range of it.
 *
 * NULL is "not known" (a missing child, no build time, no platform): those tags come last in
 * either direction (browse.ts reads them as a second range of the same index).
 *
 * The rows already there get no figures (storage has them, the database does not): the step
 * forgets that the index was built (`index_state.rebuilt`), so the next start builds it again
 * from storage (registry/indexing/startup-build.ts) while storage answers the listings.
 */
import { sql, type Kysely, type Migration } from 'kysely';

const TEXT_COLUMNS = ['created', 'platform_names'];

function columns(postgres: boolean): string[] {
  const big = postgres ? 'bigint' : 'integer';
  const key = postgres ? 'text COLLATE "C"' : 'text';
  return [
    `ALTER TABLE manifests ADD COLUMN image_size ${big}`,
    ...TEXT_COLUMNS.map((c) => `ALTER TABLE manifests ADD COLUMN ${c} ${key}`),
    `ALTER TABLE tags ADD COLUMN image_size ${big}`,
    ...TEXT_COLUMNS.map((c) => `ALTER TABLE tags ADD COLUMN ${c} ${key}`),
    `ALTER TABLE tags ADD COLUMN media_type ${key}`,
  ];
}

const INDEXES = [
  'CREATE INDEX tags_by_image_size ON tags (repository, image_size, name)',
  'CREATE INDEX tags_by_created ON tags (repository, created, name)',
  'CREATE INDEX tags_by_platforms ON tags (repository, platform_names, name)',
  'CREATE INDEX tags_by_media_type ON tags (repository, media_type, name)',
  // tags_by_digest (0001) lacks the name: many tags of one digest would need a sort
  'CREATE INDEX tags_by_digest_name ON tags (repository, digest, name)',
];

const FROM_MANIFEST = `(SELECT image_size, created, platform_names, media_type FROM manifests m WHERE m.repository = tags.repository AND m.digest = tags.digest)`;

const SQLITE_TRIGGERS = [
  `CREATE TRIGGER figures_tags_insert AFTER INSERT ON tags BEGIN
    UPDATE tags SET (image_size, created, platform_names, media_type) = ${FROM_MANIFEST} WHERE repository = new.repository AND name = new.name;
  END`,
  `CREATE TRIGGER figures_tags_digest AFTER UPDATE OF digest ON tags WHEN new.digest <> old.digest BEGIN
    UPDATE tags SET (image_size, created, platform_names, media_type) = ${FROM_MANIFEST} WHERE repository = new.repository AND name = new.name;
  END`,
  `CREATE TRIGGER figures_manifests_insert AFTER INSERT ON manifests BEGIN
    UPDATE tags SET image_size = new.image_size, created = new.created, platform_names = new.platform_names, media_type = new.media_type
      WHERE repository = new.repository AND digest = new.digest;
  END`,
  `CREATE TRIGGER figures_manifests_update AFTER UPDATE OF image_size, created, platform_names, media_type ON manifests
    WHEN new.image_size IS NOT old.image_size OR new.created IS NOT old.created OR new.platform_names IS NOT old.platform_names OR new.media_type IS NOT old.media_type BEGIN
    UPDATE tags SET image_size = new.image_size, created = new.created, platform_names = new.platform_names, media_type = new.media_type
      WHERE repository = new.repository AND digest = new.digest;
  END`,
];

const POSTGRES_TRIGGERS = [
  `CREATE FUNCTION figures_tag() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
    -- no manifest row: every figure NULL
    SELECT image_size, created, platform_names, media_type INTO NEW.image_size, NEW.created, NEW.platform_names, NEW.media_type
      FROM manifests WHERE repository = NEW.repository AND digest = NEW.digest;
    RETURN NEW;
  END $$`,
  `CREATE TRIGGER figures_tag BEFORE INSERT OR UPDATE OF digest ON tags FOR EACH ROW EXECUTE FUNCTION figures_tag()`,
  `CREATE FUNCTION figures_manifests() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN
    IF TG_OP = 'INSERT' OR NEW.image_size IS DISTINCT FROM OLD.image_size OR NEW.created IS DISTINCT FROM OLD.created
        OR NEW.platform_names IS DISTINCT FROM OLD.platform_names OR NEW.media_type IS DISTINCT FROM OLD.media_type THEN
      UPDATE tags SET image_size = NEW.image_size, created = NEW.created, platform_names = NEW.platform_names, media_type = NEW.media_type
        WHERE repository = NEW.repository AND digest = NEW.digest;
    END IF;
    RETURN NEW;
  END $$`,
  `CREATE TRIGGER figures_manifests AFTER INSERT OR UPDATE ON manifests FOR EACH ROW EXECUTE FUNCTION figures_manifests()`,
];

/** the step for PostgreSQL (`postgres`) or SQLite */
export function figuresStep(postgres: boolean): Migration {
  const statements = [
    ...columns(postgres),
    `UPDATE tags SET media_type = (SELECT media_type FROM manifests m WHERE m.repository = tags.repository AND m.digest = tags.digest)`,
    `DELETE FROM index_state WHERE key = 'rebuilt'`,
    ...(postgres ? POSTGRES_TRIGGERS : SQLITE_TRIGGERS),
    ...INDEXES,
  ];
  return {
    async up(db: Kysely<any>) {
      for (const statement of statements) await sql.raw(statement).execute(db);
    },
  };
}
