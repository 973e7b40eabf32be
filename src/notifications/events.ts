/**
 * Event records (spec 6.4) and the narrow interface through which the HTTP edge reports what
 * happened. Emitting never blocks and never fails the request that caused the event.
 */

/** the media type of an envelope `{"events": [...]}` (spec 6.3) */
export const EVENTS_MEDIA_TYPE = 'application/vnd.registry.distribution.events.v2+json';

export type EventAction = 'push' | 'pull' | 'mount' | 'delete';

/** a content descriptor as manifests embed it (for `events.includereferences`) */
export interface ReferenceDescriptor {
  mediaType?: string;
  digest: string;
  size?: number;
}

export interface EventTarget {
  mediaType?: string;
  digest: string;
  size?: number;
  /** deprecated twin of `size` (spec 6.4): always equal to it */
  length?: number;
  repository: string;
  /** the repository a mounted blob came from */
  fromRepository?: string;
  url?: string;
  tag?: string;
  /** descriptors the manifest references (only with notifications.events.includereferences) */
  references?: ReferenceDescriptor[];
}

export interface RequestRecord {
  id: string;
  addr: string;
  host: string;
  method: string;
  useragent: string;
}

/** the authenticated agent; `{}` for anonymous requests */
export interface ActorRecord {
  name?: string;
}

export interface SourceRecord {
  /** host:port of this instance */
  addr: string;
  instanceID?: string;
}

export interface Event {
  id: string;
  /** RFC 3339 with offset */
  timestamp: string;
  action: EventAction;
  target: EventTarget;
  request: RequestRecord;
  actor: ActorRecord;
  source: SourceRecord;
}

/** what the edge knows about an event; the notifier adds id, timestamp and source */
export type EventInput = Omit<Event, 'id' | 'timestamp' | 'source'>;

/** the one thing handlers see of notifications */
export interface EventSink {
  /** queues the event for every endpoint that wants it; returns at once, never throws */
  emit(event: EventInput): void;
  /** true when some endpoint may want events (lets callers skip building them) */
  readonly active: boolean;
}

/** the sink of a registry without notification endpoints */
export const NO_EVENTS: EventSink = { emit() {}, active: false };

/**
 * The descriptors a manifest references, read from its JSON without validating it (it was
 * validated when pushed): an index's or list's children, an image's config and layers, a
 * first-generation manifest's fsLayers. Unreadable content yields none.
 */
export function manifestReferences(content: Buffer): ReferenceDescriptor[] {
  let body: unknown;
  try {
    body = JSON.parse(content.toString('utf8'));
  } catch {
    return [];
  }
  if (body === null || typeof body !== 'object') return [];
  const doc = body as Record<string, unknown>;
  const out: ReferenceDescriptor[] = [];
  const add = (value: unknown) => {
    if (value && typeof value === 'object' && typeof (value as { digest?: unknown }).digest === 'string') {
      const d = value as { mediaType?: unknown; digest: string; size?: unknown };
      out.push({
        ...(typeof d.mediaType === 'string' ? { mediaType: d.mediaType } : {}),
        digest: d.digest,
        ...(typeof d.size === 'number' ? { size: d.size } : {}),
      });
    }
  };
  if (Array.isArray(doc.manifests)) doc.manifests.forEach(add);
  add(doc.config);
  if (Array.isArray(doc.layers)) doc.layers.forEach(add);
  if (Array.isArray(doc.fsLayers)) {
    for (const layer of doc.fsLayers) {
      const sum = (layer as { blobSum?: unknown } | null)?.blobSum;
      if (typeof sum === 'string') out.push({ mediaType: 'application/vnd.docker.container.image.rootfs.diff+x-gtar', digest: sum });
    }
  }
  return out;
}
