/**
 * What the edge records of each exchange once its response is sent: the bytes it moved on the
 * connection, and the error it answered, for the access log line and the request metrics.
 */
import type { Socket } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { RegistryError } from '../registry/errors.js';
import { userOf } from './grants.js';

/**
 * Each connection's byte counters when its previous response finished: requests on one HTTP/1.1
 * connection are sequential, so the difference at the next response is that exchange's bytes on
 * the wire (headers included, chunked bodies counted as they arrived).
 */
const socketMarks = new WeakMap<Socket, { read: number; written: number }>();
const answeredErrors = new WeakMap<FastifyRequest, RegistryError>();

/** the error a request was answered with, for its log line */
export function noteError(req: FastifyRequest, err: RegistryError): void {
  answeredErrors.set(req, err);
}

/** bytes read and written on the connection for this exchange; call once per response */
export function exchangeBytes(req: FastifyRequest, reply: FastifyReply): { read: number; written: number } {
  const socket = req.raw.socket;
  const last = socketMarks.get(socket) ?? { read: 0, written: 0 };
  const now = { read: socket.bytesRead, written: socket.bytesWritten };
  socketMarks.set(socket, now);
  if (req.raw.httpVersionMajor >= 2) {
    // streams of one HTTP/2 session interleave on its socket: fall back to what the messages declare
    return { read: Number(req.headers['content-length'] ?? 0), written: Number(reply.getHeader('content-length') ?? 0) };
  }
  return { read: now.read - last.read, written: now.written - last.written };
}

/** the access log's fields: Distribution's facts (method, path, status, sizes, duration, address, agent), and the user and error when there are */
export function accessLogFields(req: FastifyRequest, reply: FastifyReply, bytes: { read: number; written: number }): Record<string, unknown> {
  const error = answeredErrors.get(req);
  return {
    method: req.method,
    path: req.url.split('?')[0],
    status: reply.statusCode,
    bytesIn: bytes.read,
    bytesOut: bytes.written,
    durationMs: Math.round(reply.elapsedTime * 10) / 10,
    remoteAddr: req.ip,
    userAgent: req.headers['user-agent'],
    user: userOf(req),
    ...(error && { error: error.code, errorMessage: error.message }),
  };
}
