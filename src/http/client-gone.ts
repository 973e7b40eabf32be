/**
 * A signal for costly work done for one request: aborted when the client closes the connection
 * before the answer is sent, so the server does not finish work nobody waits for.
 */
import type { FastifyReply } from 'fastify';
import { RegistryError } from '../registry/errors.js';

/** nginx's "client closed request": what the access log records for such a request */
const CLIENT_CLOSED = 499;

export function clientGone(reply: FastifyReply): AbortSignal {
  const controller = new AbortController();
  reply.raw.once('close', () => {
    if (!reply.raw.writableEnded) {
      controller.abort(new RegistryError('UNKNOWN', 'the client closed the connection before the answer: the work was stopped', { status: CLIENT_CLOSED }));
    }
  });
  return controller.signal;
}
