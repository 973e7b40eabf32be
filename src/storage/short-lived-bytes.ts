/**
 * Where the storage drivers and the registry core note Buffers that are garbage once their one
 * consumer is done with them (socket reads of a request body, chunks of a file hashed again, a
 * blob streamed from S3). The note goes out on a diagnostics channel: the process's runtime tuning
 * (src/runtime/gc-pacing.ts) listens and collects them sooner, so the domain imports nothing of it.
 */
import diagnostics from 'node:diagnostics_channel';

export const SHORT_LIVED_BYTES = 'berth:short-lived-bytes';

const channel = diagnostics.channel(SHORT_LIVED_BYTES);

/** notes `bytes` of Buffers that are garbage once their one consumer is done with them */
export function shortLivedBytes(bytes: number): void {
  if (channel.hasSubscribers) channel.publish(bytes);
}
