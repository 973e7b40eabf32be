/**
 * CloudEvents 1.0 in structured mode (`format: cloudevents` on an endpoint): each event is POSTed
 * alone as `application/cloudevents+json`, its attributes beside `data`, which is the event as
 * Distribution's envelope carries it, so a receiver's code for the data is the same either way.
 * `type` is `io.berth.<action>`, `source` the repository's API path (`/v2/<name>`), `subject` the
 * tag, or the digest when there is none. docs/decisions.md, "CloudEvents".
 */
import type { Event } from './events.js';

export const CLOUDEVENTS_MEDIA_TYPE = 'application/cloudevents+json';

export interface CloudEvent {
  specversion: '1.0';
  id: string;
  type: string;
  source: string;
  subject: string;
  time: string;
  datacontenttype: 'application/json';
  data: Event;
}

export function toCloudEvent(event: Event): CloudEvent {
  return {
    specversion: '1.0',
    id: event.id,
    type: `io.berth.${event.action}`,
    source: `/v2/${event.target.repository}`,
    subject: event.target.tag ?? event.target.digest,
    time: event.timestamp,
    datacontenttype: 'application/json',
    data: event,
  };
}
