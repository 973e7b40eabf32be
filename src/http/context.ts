/** What every handler gets: the registry core and the edge's helpers, built once by the app. */
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { AuditSink } from '../audit/record.js';
import type { Grant } from '../auth/access.js';
import type { Auth } from '../auth/index.js';
import type { Readiness } from '../health/readiness.js';
import type { AuditLog } from '../metadata/audit.js';
import type { Browse } from '../metadata/browse.js';
import type { HistoryReads } from '../metadata/history.js';
import type { SearchReads } from '../metadata/search.js';
import type { UsageReads } from '../metadata/usage.js';
import type { EventSink } from '../notifications/events.js';
import type { PullGate } from '../policies/signatures/gate.js';
import type { Quotas } from '../policies/quota.js';
import type { PullSink } from '../registry/activity.js';
import type { BlobStore } from '../registry/blobs.js';
import type { Catalog } from '../registry/catalog.js';
import type { ContentSource } from '../registry/content.js';
import type { ManifestStore } from '../registry/manifest-store.js';
import type { TagStore } from '../registry/tags.js';
import type { UploadSessions } from '../registry/uploads.js';
import type { CatalogCursors } from './catalog-cursor.js';
import type { EdgeOptions } from './options.js';
import type { Route } from './routes.js';
import type { UploadStateSigner } from './upload-state.js';
import type { URLBuilder } from './urls.js';

export interface Services {
  options: EdgeOptions;
  blobs: BlobStore;
  uploads: UploadSessions;
  manifests: ManifestStore;
  tags: TagStore;
  catalog: Catalog;
  /** what GET and HEAD of manifests, blobs and tags read: storage, or the pull-through cache */
  content: ContentSource;
  uploadState: UploadStateSigner;
  /** seals the `last` of a filtered catalog page that stopped at its scan budget */
  catalogCursors: CatalogCursors;
  urls: URLBuilder;
  /** notifications: handlers report what they did here (never awaited) */
  events: EventSink;
  /** pull counts in the metadata index, when it is on: a GET of a manifest is reported here (never awaited) */
  pulls?: PullSink;
  /** Prometheus request metrics (http.debug.prometheus), when enabled */
  requestMetrics?: RequestMetrics;
  /** the configured health checks: while one fails, every request answers 503 */
  health?: { failures(): Record<string, string> };
  /** the failing checks, for /readyz (a live storage probe when no health checks are configured) */
  readiness: Readiness;
  auth: Auth;
  /** pages of a feature's own on the main port (the web interface) */
  pages?: Pages;
  /** the metadata index's reads for the extensions API and the web interface; undefined: storage-only operation */
  browse?: BrowseReads;
  /** signature policies: a manifest GET/HEAD the caller may not have is refused (403 DENIED) */
  pullGate?: PullGate;
  /** the audit log (src/audit/), when on: writes, sign-ins and refusals are recorded here (never awaited) */
  audit?: AuditSink;
  /** the audit log's reads for the web interface, when it is on */
  auditReads?: AuditReads;
  /** the quotas (src/policies/quota.ts): blob uploads are refused once one is full; their use for the API */
  quotas?: Pick<Quotas, 'admitUpload' | 'report'>;
}

/** the audit log as the web interface reads it (src/metadata/audit.ts), and who may */
export interface AuditReads {
  log: AuditLog;
  mayRead(grant: Grant): boolean;
}

/** what the metadata index answers beyond the V2 API (src/metadata/): listings, usage, search, tag history */
export interface BrowseReads {
  browse: Browse;
  usage: UsageReads;
  search: SearchReads;
  history: HistoryReads;
  /** the index was built (registry/indexing/listing-source.ts): until then it may hold only part of storage */
  inSync(): Promise<boolean>;
}

/** a feature's own paths on the main port, outside the V2 API (the web interface under /ui/) */
export interface Pages {
  /** is `path` (below http.prefix) one of these pages? `/` may be, for some requests */
  owns(req: FastifyRequest, path: string): boolean;
  /** answers a request `owns` claimed, after the health gate and the address rate limit */
  serve(req: FastifyRequest, reply: FastifyReply, path: string, services: Services): Promise<unknown>;
}

export interface RequestMetrics {
  /** `route` is the route kind (blob, manifest, uploads, ...), `unknown` when none matched */
  observeRequest(method: string, route: string, status: number, seconds: number, bytesIn: number, bytesOut: number): void;
  /** a request on a route of kind `route` has started; the function returned is called once, when its response closes */
  requestStarted?(route: string): () => void;
}

export type Handler<R extends Route = Route> = (req: FastifyRequest, reply: FastifyReply, route: R, services: Services) => Promise<unknown>;
