/** The tables, as Kysely sees them (migrations.ts creates them). */
import type { Generated } from 'kysely';

export interface RepositoriesTable {
  name: string;
  /** 1 when the repository has `_manifests` (the catalog lists it), 0 when it holds only blob links */
  has_manifests: number;
  /** writes of the request path to the repository, counted (a rebuild checks it did not miss one: metadata-index.ts) */
  changes: Generated<number | string>;
  /** kept by step 0004's triggers (browse-migration.ts): linked blobs' and manifests' bytes */
  total_size: Generated<number | string>;
  /** the newest tag push the repository had; '' for none */
  last_pushed_at: Generated<string>;
  total_pulls: Generated<number | string>;
  tag_count: Generated<number | string>;
}

export interface ManifestsTable {
  repository: string;
  digest: string;
  media_type: string;
  /** bigint on PostgreSQL, which `pg` hands back as a string */
  size: number | string;
  config_digest: string | null;
  /** JSON text */
  platforms: string;
  labels: string;
  annotations: string;
  subject: string | null;
  pushed_at: string;
  pull_count: Generated<number>;
  last_pulled_at: string | null;
  /** step 0006 (figures-migration.ts): the image's bytes and build time, null when unknown */
  image_size: number | string | null;
  created: string | null;
  /** the platforms as the web interface lists them (`os/arch[/variant]`, comma-separated), for sorting; null for none */
  platform_names: string | null;
}

export interface TagsTable {
  repository: string;
  name: string;
  digest: string;
  pushed_at: string;
  /** the tag's manifest's bytes, kept by step 0004's triggers */
  manifest_size: Generated<number | string>;
  /** its manifest's figures, kept by step 0006's triggers (figures-migration.ts); null when unknown */
  image_size: Generated<number | string | null>;
  created: Generated<string | null>;
  platform_names: Generated<string | null>;
  media_type: Generated<string | null>;
}

export interface TagHistoryTable {
  repository: string;
  tag: string;
  digest: string;
  from_at: string;
  to_at: string | null;
  pushed_by: string | null;
}

export interface BlobsTable {
  digest: string;
  size: number | string;
}

export interface RepositoryBlobsTable {
  repository: string;
  digest: string;
}

/** a manifest's labels and annotations, a row each (step 0004's triggers keep them), for search by value */
export interface ManifestValuesTable {
  repository: string;
  digest: string;
  kind: 'label' | 'annotation';
  key: string;
  value: string;
}

/** key/value state of the index itself, e.g. when it was last rebuilt */
export interface IndexStateTable {
  key: string;
  value: string;
}

/** the reconciler's fingerprint of a repository in storage when it last read it (only the reconciler reads or writes it) */
export interface RepositoryVersionsTable {
  repository: string;
  version: string;
}

/** step 0008 (audit-migration.ts): one audit record a row (src/audit/record.ts); not derived from storage */
export interface AuditLogTable {
  id: Generated<number | string>;
  /** ISO time in UTC */
  at: string;
  actor: string | null;
  address: string | null;
  action: string;
  repository: string | null;
  target: string | null;
  outcome: string;
  detail: string | null;
}

/** step 0007 (api-tokens-migration.ts): API tokens, with their secrets' SHA-256 only */
export interface ApiTokensTable {
  name: string;
  /** base64url SHA-256 of the secret */
  secret_hash: string;
  /** JSON array of repository globs */
  repositories: string;
  /** JSON array of `pull`, `push`, `delete` */
  actions: string;
  /** the person who created it in the web interface; null from the command line */
  owner: string | null;
  /** JSON array of the owner's groups when known; null otherwise */
  owner_groups: string | null;
  created_at: string;
  expires_at: string | null;
  revoked_at: string | null;
  last_used_at: string | null;
}

export interface Database {
  repositories: RepositoriesTable;
  manifests: ManifestsTable;
  tags: TagsTable;
  tag_history: TagHistoryTable;
  blobs: BlobsTable;
  repository_blobs: RepositoryBlobsTable;
  manifest_values: ManifestValuesTable;
  index_state: IndexStateTable;
  repository_versions: RepositoryVersionsTable;
  audit_log: AuditLogTable;
  api_tokens: ApiTokensTable;
}
