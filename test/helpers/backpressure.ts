/** Writing to a stream with backpressure. */
import type { Writable } from 'node:stream';

/** resolves when `stream` wants more data ('drain') or can take none ('close') */
export function drained(stream: Writable): Promise<void> {
  return new Promise<void>((ok) => {
    const done = () => {
      stream.off('drain', done);
      stream.off('close', done);
      ok();
    };
    stream.on('drain', done);
    stream.on('close', done);
  });
}
