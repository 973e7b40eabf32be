/**
 * The one door for optional features: each says whether the configuration turns it on and, only
 * then, loads its modules and hands the app the parts it plugs in. createApp runs the list in
 * features/index.ts and has no branch of its own per feature.
 *
 * A feature reads the configuration through the slice type it declares (`C`), so no feature
 * imports the configuration schema; app.ts passes the whole validated configuration and the
 * compiler checks that it fits every slice.
 */
import type { Kysely } from 'kysely';
import type { Logger } from 'pino';
import type { AuditSink } from '../audit/record.js';
import type { ApiTokens } from '../auth/api-tokens.js';
import type { BucketOptions, RateLimiter } from '../auth/ratelimit.js';
import type { AuditReads, BrowseReads, Pages, RequestMetrics } from '../http/context.js';
import type { HealthMonitor } from '../health/monitor.js';
import type { Readiness } from '../health/readiness.js';
import type { EventSink } from '../notifications/events.js';
import type { Notifier } from '../notifications/notifier.js';
import type { PullGate } from '../policies/signatures/gate.js';
import type { BlobGuard, BlobStore } from '../registry/blobs.js';
import type { PullSink } from '../registry/activity.js';
import type { ContentSource } from '../registry/content.js';
import type { ManifestGuard, ManifestStore } from '../registry/manifest-store.js';
import type { Database } from '../metadata/schema.js';
import type { Quotas } from '../policies/quota.js';
import type { SharedCache } from '../registry/cache/shared-cache.js';
import type { IndexSink, RepositorySink } from '../registry/indexing/sink.js';
import type { ListingSource } from '../registry/indexing/listing-source.js';
import type { TagStore } from '../registry/tags.js';
import type { UploadSessions } from '../registry/uploads.js';
import type { Scheduler } from '../scheduler/scheduler.js';
import type { StorageDriver } from '../storage/driver.js';

export interface FeatureContext {
  logger: Logger;
  scheduler: Scheduler;
}

/** the parts of a registry that features may use once its core is built */
export interface Running {
  driver: StorageDriver;
  notifier: Notifier;
  logger: Logger;
  /** the failing health checks (empty when ready), for /readyz and /debug/health */
  readiness: Readiness;
  /** every feature's figures, for /debug/vars and Prometheus */
  figures(): Figures;
  /** the metadata index, for the passes outside the request path to tell of the repositories they changed */
  index?: RepositorySink;
  /** the metadata index's database (the quotas read and lock through it) */
  database?: Kysely<Database>;
}

/** sections of numbers a feature reports, e.g. { gc: { lastDurationSeconds: 1.2 } } */
export type Figures = Record<string, Record<string, number>>;

/** the registry core a content source builds on */
export interface Core {
  driver: StorageDriver;
  blobs: BlobStore;
  uploads: UploadSessions;
  manifests: ManifestStore;
  tags: TagStore;
  logger: Logger;
  /** the metadata index the stores tell (a store a feature builds passes it on) */
  index?: IndexSink;
  /** the audit log, for writes a feature makes itself (the pull-through cache's fills) */
  audit?: AuditSink;
}

/** what a feature plugs in; every part is optional */
export interface FeatureParts {
  /** wraps the driver (storage middleware, instrumentation), in the order of the feature list */
  wrapDriver?(inner: StorageDriver): StorageDriver;
  /** token buckets shared between instances, instead of one process's own */
  rateLimiter?(bucket: BucketOptions): RateLimiter;
  /** per-request figures from the HTTP edge */
  requestMetrics?: RequestMetrics;
  /** where manifests, blobs and tags are read from instead of storage alone (`stored`), e.g. the pull-through cache */
  contentSource?(core: Core, stored: ContentSource): ContentSource;
  /** decides which manifests a caller may pull (signature policies), reading through the finished content source */
  pullGate?(content: ContentSource): PullGate;
  /** a write to this repository answers 405 UNSUPPORTED with the message returned (the pull-through cache) */
  refuseWrites?(name: string): string | undefined;
  /** containerd's mirror parameter `ns=<registry host>`: the repository's local name, when that host is mirrored */
  withNamespace?(name: string, ns: string): string | undefined;
  /** the metadata cache's second level, shared by every instance (Redis) */
  sharedCache?: SharedCache;
  /** the metadata index, told of every write after storage (the stores call it) */
  indexSink?: IndexSink;
  /** the metadata index's listings, which the catalog and the tag store ask before storage */
  listingSource?: ListingSource;
  /** the same index, told by the passes outside the request path of each repository they changed */
  repositorySink?: RepositorySink;
  /** counts GETs of manifests (the edge calls it after a 200 to a GET) */
  pulls?: PullSink;
  /** the metadata index's reads for the extensions API and the web interface */
  browse?: BrowseReads;
  /** the audit log (in the metadata index's database): the edge and authentication record to it */
  audit?: AuditSink;
  /** the audit log's reads for the web interface */
  auditReads?: AuditReads;
  /** API tokens, kept in the metadata index (authentication tries them for Basic credentials) */
  apiTokens?: ApiTokens;
  /** the metadata index's database, for the features that read or lock through it */
  database?: Kysely<Database>;
  /** what the core asks before a push or delete (immutable tags, quotas), and the edge before a blob upload */
  policies?(running: Running): Promise<{ manifests: ManifestGuard; uploads?: Pick<Quotas, 'admitUpload' | 'report'> }>;
  /** records uses of blobs for online garbage collection (the BlobStore calls it) */
  blobGuard?(driver: StorageDriver): BlobGuard;
  /** the metadata cache's counts (reads, hits, errors), kept up to date by the cache, for metrics */
  watchCache?(counts: Readonly<{ requests: number; hits: number; errors: number }>): void;
  /** numbers for /debug/vars (a section each) and Prometheus (a gauge each); the same keys every time */
  figures?(): Figures;
  /** paths of the feature's own on the main port (the web interface) */
  pages?: Pages;
  /** health checks polled in the background: while one fails, every request answers 503 */
  health?: HealthMonitor;
  /** once the core is built, before the registry listens */
  attach?(running: Running): void;
  /** the registry core, once built (replication writes and reads through it) */
  withCore?(core: Core): void;
  /** told what the edge reports (pushes, deletes), beside the notification endpoints */
  events?: EventSink;
  /** once the registry listens; resolves to the URL of a listener of the feature's own, if any */
  listening?(running: Running): Promise<string | void>;
  /** at shutdown, after the registry stopped serving (features close in reverse order) */
  close?(): Promise<void>;
}

export interface Feature<C> {
  readonly name: string;
  enabled(config: C): boolean;
  /** loads the feature's modules (only now: a feature that is off costs no memory) */
  load(config: C, context: FeatureContext): Promise<FeatureParts>;
}
