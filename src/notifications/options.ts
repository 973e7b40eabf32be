/**
 * The notifications slice of the configuration, as this folder takes it (the composition root
 * hands it over; nothing here reads the configuration module). Durations are milliseconds.
 */
import type { EventAction } from './events.js';

export interface NotificationsOptions {
  events: { includereferences: boolean };
  endpoints: EndpointOptions[];
}

export interface EndpointOptions {
  name: string;
  /** a disabled endpoint is not set up */
  disabled?: boolean;
  url: string;
  /** sent with every request, each value on its own header line */
  headers: Record<string, string[]>;
  /** bounds one delivery attempt, redirects and reading the answer included */
  timeout: number;
  /** consecutive failures retried at once before each retry waits `backoff` */
  threshold: number;
  backoff: number;
  ignoredmediatypes: string[];
  ignore: { mediatypes: string[]; actions: EventAction[] };
  /** most events held for this endpoint; unset: unbounded */
  queuelimit?: number;
  /** `distribution` (default): envelopes of up to 100 events; `cloudevents`: one CloudEvent per request (cloudevents.ts) */
  format?: 'distribution' | 'cloudevents';
}
