/** The first link of an endpoint's chain: which events it wants (ignore rules of spec 6.1 / Distribution). */
import type { Event } from './events.js';
import type { EndpointOptions } from './options.js';

export type EventFilter = (event: Pick<Event, 'action' | 'target'>) => boolean;

/** drops the actions of `ignore.actions` and the media types of `ignore.mediatypes` and `ignoredmediatypes` */
export function ignoreFilter(options: Pick<EndpointOptions, 'ignore' | 'ignoredmediatypes'>): EventFilter {
  const actions = new Set(options.ignore.actions);
  const mediaTypes = new Set([...options.ignoredmediatypes, ...options.ignore.mediatypes]);
  return (event) => !actions.has(event.action) && (event.target.mediaType === undefined || !mediaTypes.has(event.target.mediaType));
}
