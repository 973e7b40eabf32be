/**
 * The shapes the web interface's server sends and its browser code reads (types only, no imports:
 * both the server's and the client's tsconfig compile this file), so the compiler checks both ends.
 */

/** what the page tells the browser code: where the API is and what the registry allows */
export interface PageSettings {
  /** http.prefix ('' or '/path') */
  prefix: string;
  /** http.host's host[:port] for pull commands; undefined: the address bar's */
  host?: string;
  /** http.host names plain HTTP (the pull commands then carry the clients' insecure switch); undefined: the address bar's scheme says */
  plainHTTP?: boolean;
  auth: 'none' | 'htpasswd' | 'token';
  /** auth.oidc: people sign in through the OpenID Provider (/ui/signin), the session is a cookie */
  signIn?: boolean;
  deletes: boolean;
  readOnly: boolean;
  version: string;
}

export interface Descriptor {
  mediaType?: string;
  digest: string;
  size?: number;
  artifactType?: string;
  platform?: { os?: string; architecture?: string; variant?: string };
  annotations?: Record<string, string>;
}

/** the fields of the manifest formats the interface reads (schema1's fsLayers and history too) */
export interface ManifestDoc {
  mediaType?: string;
  artifactType?: string;
  config?: Descriptor;
  layers?: Descriptor[];
  manifests?: Descriptor[];
  subject?: Descriptor;
  annotations?: Record<string, string>;
  fsLayers?: { blobSum: string }[];
  architecture?: string;
  history?: { v1Compatibility?: string }[];
}

export interface Summary {
  digest: string;
  mediaType: string;
  /** bytes of config and layers (an index: of every child); undefined when a part cannot be read */
  size?: number;
  /** os/architecture[/variant] of the image, or of each child of an index */
  platforms: string[];
  /** the image config's `created`, else the manifest's `org.opencontainers.image.created` annotation (an artifact's); an index: its newest child's */
  created?: string;
  artifactType?: string;
}

/** a manifest that could not be read stands as its digest and why */
export interface Unreadable {
  digest: string;
  error: string;
}

/** GET /ui/api/repositories */
export interface RepositoryPage {
  /**
   * `pushed`: the newest push among the repository's tags (ISO 8601), when looked up; `size`
   * (bytes of its blobs, each once, and manifests) and `pulls`: from the metadata index only
   */
  repositories: { name: string; tags?: number; pushed?: string; size?: number; pulls?: number }[];
  /** last push is looked up only for repositories of at most this many tags */
  pushLookup: number;
  /** the `last` of the next page, when there is one */
  next?: string;
  /** answered from the metadata index: sizes and pulls are there, and search (`/ui/api/search`) answers */
  indexed?: boolean;
}

/** GET /ui/api/search?q=: what the metadata index finds (prefixes), in repositories the caller may pull */
export interface SearchAnswer {
  repositories: string[];
  tags: { repository: string; tag: string; digest: string }[];
  digests: { repository: string; digest: string; mediaType: string }[];
  values: { repository: string; digest: string; kind: 'label' | 'annotation'; key: string; value: string }[];
  truncated: boolean;
}

/** `pushed`: when the tag was last pushed (the manifest page's `pushed` is the manifest's, by any tag or digest) */
/** `signedBy`: where a signatures policy applies, the trusted keys that signed the image (empty: not signed) */
export type TagRow = { tag: string } & (Summary & { pushed?: string; signedBy?: string[] } | { error: string });

/** GET /ui/api/repositories/<name>/tags/list?n=&sort=&desc=1&last= (by name) or &from= (by another column) */
export interface TagPage {
  name: string;
  total: number;
  tags: TagRow[];
  /** the query parameters of the next page, when there is one */
  next?: { last?: string; from?: string };
  /** sorted by a column other than the name over only the first this many tags (by name) of `total` */
  sortedAmong?: number;
}

/**
 * the image config fields the manifest page shows, as stored: a config is any JSON object the
 * registry accepted, so each field has whatever shape it was pushed with (the page checks them)
 */
export interface ImageConfig {
  created?: unknown;
  author?: unknown;
  /** in the specification: Entrypoint, Cmd, Env (string arrays), WorkingDir, User, Labels (object of strings), ExposedPorts (object) */
  config?: unknown;
  /** in the specification: an array of { created, created_by, empty_layer, comment } */
  history?: unknown;
}

/** GET /ui/api/repositories/<name>/manifests/<reference> */
export interface ManifestDetail {
  name: string;
  digest: string;
  mediaType: string;
  /** the manifest's own bytes */
  bytes: number;
  manifest: ManifestDoc;
  summary: Summary;
  config?: ImageConfig;
  children?: (Summary | Unreadable)[];
  referrers: Descriptor[];
  /** the tags naming this digest, among the first `scanned` of `total` */
  tags: { tags: string[]; scanned: number; total: number };
  pushed?: string;
  /** where a signatures policy applies: the trusted keys that signed it (empty: not signed) */
  signedBy?: string[];
  /** the caller's grant allows deleting it (with token auth only what the token holds: pull) */
  mayDelete: boolean;
}

/** GET /ui/api/session: who the registry takes the caller for (none: anonymous, or no valid credentials) */
export interface Session {
  user?: string;
}

/** GET /ui/api/registry */
export interface RegistryAbout {
  version: string;
  driver: string;
  readOnly: boolean;
  deletes: boolean;
  auth: string;
  mirrors: { prefix: string; remoteurl: string }[];
  healthy: boolean;
  /** names of the failing health checks */
  failing: string[];
  notifications: { name: string; counters: Record<string, number>; statuses: Record<string, number> }[];
  figures: Record<string, Record<string, number>>;
  /** storage used per top-level namespace (each blob and manifest once), from the metadata index; absent without it */
  usage?: { namespace: string; repositories: number; bytes: number }[];
  /** the quotas of the policies whose every repository the caller may see, with their use; absent without quotas */
  quotas?: QuotaUse[];
}

/** a quota and its use (src/policies/quota.ts QuotaReport) */
export interface QuotaUse {
  policy: string;
  repositories: string[];
  quota: { bytes?: number; repositories?: number };
  use: { bytes: number; repositories: number };
}

/** /ui/api/audit: a page of the audit log, newest first (src/ui/audit-api.ts) */
export interface AuditPage {
  records: { at: string; actor?: string; address?: string; action: string; repository?: string; target?: string; outcome: string; detail?: string }[];
  /** `last` of the next page, when there is one */
  next?: string;
}
