/**
 * Event records (spec 6.4) and the narrow interface through which the HTTP edge reports what
 * happened. Emitting never blocks and never fails the request that caused the event.
 */

/** the media type of an envelope `{"events": [...]}` (spec 6.3) */
export const EVENTS_MEDIA_TYPE = 'application/vnd.registry.distribution.events.v2+json';

export type EventAction = 'push' | 'pull' | 'mount' | 'delete';

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
  references?: { mediaType?: string; digest: string; size?: number }[];
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

/** one sink that tells every one of `sinks` (the notification endpoints, replication); active when any is */
export function teeEvents(sinks: readonly EventSink[]): EventSink {
  if (sinks.length === 1) return sinks[0];
  return {
    get active() {
      return sinks.some((sink) => sink.active);
    },
    emit(event) {
      for (const sink of sinks) if (sink.active) sink.emit(event);
    },
  };
}
