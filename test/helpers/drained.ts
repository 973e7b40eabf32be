/** For fake servers that write in pieces: resolves once the response drained, or closed (the client left). */
import type { ServerResponse } from 'node:http';

export function drainedOrClosed(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off('drain', done);
      res.off('close', done);
      resolve();
    };
    res.on('drain', done);
    res.on('close', done);
  });
}
