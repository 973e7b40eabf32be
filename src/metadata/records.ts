/**
 * What the index holds, as plain records: the shape the core hands to the index when it writes
 * (registry/index-sink.ts) and reads back to compare with storage (`berth verify --index`).
 * Times are ISO-8601 strings in UTC (sortable as text on both engines).
 */

export interface Platform {
  os: string;
  architecture: string;
  variant?: string;
}

export interface ManifestRecord {
  repository: string;
  digest: string;
  mediaType: string;
  /** bytes as served (a signed first-generation manifest: the signed bytes) */
  size: number;
  configDigest: string | null;
  /** an image's platform from its config, an index's from its entries; [] when none is known */
  platforms: Platform[];
  /** the image configuration's labels (config.Labels) */
  labels: Record<string, string>;
  annotations: Record<string, string>;
  subject: string | null;
  pushed: string;
  /** the image's bytes as the web interface shows them: config + layers, an index its children's; null when a part is unknown (registry/indexing/image-figures.ts) */
  imageSize: number | null;
  /** when the image was built (its config's `created`; an index: its newest child's); null when unknown */
  created: string | null;
}

export interface TagRecord {
  name: string;
  digest: string;
  /** when the tag was last pointed at its manifest */
  pushed: string;
}

export interface BlobLinkRecord {
  digest: string;
  size: number;
}

/** everything the index holds about one repository that storage can tell */
export interface RepositoryFacts {
  name: string;
  manifests: ManifestRecord[];
  tags: TagRecord[];
  blobs: BlobLinkRecord[];
}

export interface TagHistoryRecord {
  tag: string;
  digest: string;
  from: string;
  /** null while the tag still names the digest */
  to: string | null;
  pushedBy: string | null;
}
