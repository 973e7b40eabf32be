/**
 * What one client may hold of the server (`http.limits`): how many connections are open at once,
 * how long a request's head may take to arrive, how long a kept-alive connection may sit idle, how
 * slowly a request body may come. Each bound closes a way a few sockets starved the registry
 * (issue 18; docs/security.md maps each to its test).
 */
import { readFileSync } from 'node:fs';
import { STATUS_CODES, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Server, Socket } from 'node:net';
import { ConnectionTable } from './connection-table.js';

export interface ConnectionLimits {
  /** open connections per process; beyond it a new one is answered 503 (plain HTTP) or closed (TLS) */
  connections: number;
  /** of those, how many one client address may hold, so one client cannot take them all */
  perAddress: number;
  /** a request line and its headers (and a TLS handshake) must arrive within this */
  headerTimeoutMs: number;
  /** a kept-alive connection without a request is closed after this */
  idleTimeoutMs: number;
  /** a body bringing fewer than `minimum` bytes a second over `windowMs` is cut; minimum 0: never */
  bodyRate: { minimum: number; windowMs: number };
}

/** descriptors kept for everything but client connections when `connections` is auto: files, logs, the store */
const AUTO_SHARE = 3 / 4;
/** the limit assumed when the open-file limit cannot be read (the common soft default is 1,024) */
const ASSUMED_DESCRIPTORS = 1024;

/** http.limits as the configuration gives them (durations in ms) */
export interface LimitsConfig {
  connections: number | 'auto';
  connectionsperaddress: number | 'auto';
  headertimeout: number;
  idletimeout: number;
  bodyrate: { minimum: number; window: number };
}

export function connectionLimits(limits: LimitsConfig): ConnectionLimits {
  const connections = limits.connections === 'auto' ? Math.max(1, Math.floor(descriptorLimit() * AUTO_SHARE)) : limits.connections;
  return {
    connections,
    perAddress: limits.connectionsperaddress === 'auto' ? Math.max(1, Math.floor(connections / 2)) : Math.min(limits.connectionsperaddress, connections),
    headerTimeoutMs: limits.headertimeout,
    idleTimeoutMs: limits.idletimeout,
    bodyRate: { minimum: limits.bodyrate.minimum, windowMs: limits.bodyrate.window },
  };
}

/** this process's soft limit on open files (Linux: /proc/self/limits; Node cannot ask getrlimit) */
export function descriptorLimit(limitsFile = '/proc/self/limits'): number {
  try {
    const line = readFileSync(limitsFile, 'utf8')
      .split('\n')
      .find((l) => l.startsWith('Max open files'));
    const soft = line ? Number(line.slice('Max open files'.length).trim().split(/\s+/)[0]) : NaN;
    return Number.isInteger(soft) && soft > 0 ? soft : ASSUMED_DESCRIPTORS;
  } catch {
    return ASSUMED_DESCRIPTORS;
  }
}

/** the server options of Node and Fastify these limits set (plain HTTP/1.1, HTTPS, HTTP/2) */
export function serverTimeouts(limits: ConnectionLimits) {
  return {
    keepAliveTimeout: limits.idleTimeoutMs,
    http2SessionTimeout: limits.idleTimeoutMs,
    // Node enforces headersTimeout only when it sweeps its connections: sweep often enough that
    // the bound is the configured one, not up to 30 s (Node's default interval) later
    http: { headersTimeout: limits.headerTimeoutMs, requestTimeout: 0, connectionsCheckingInterval: sweepInterval(limits) },
  };
}

/** how often Node looks for requests whose head is overdue */
export function sweepInterval(limits: ConnectionLimits): number {
  return Math.max(100, Math.min(1000, Math.floor(limits.headerTimeoutMs / 4)));
}

/**
 * Counts the server's connections, in all and per client address, and turns away those beyond
 * the limits before anything reads them. A plain-HTTP client gets a 503 it can read (with
 * Retry-After) instead of a reset; on TLS nothing can be said before a handshake, so the
 * connection is closed. When all connections are taken, a newcomer is let in by closing one of
 * the address holding the most (idle first, then the slowest: connection-table.ts), so a few
 * addresses cannot lock every other client out.
 */
export function gateConnections(server: Server, limits: Pick<ConnectionLimits, 'connections' | 'perAddress'>, plainHTTP: boolean, onTurnedAway: (how: TurnedAway) => void): void {
  // the server's own listeners (HTTP parser, TLS) run only for connections let in
  const serve = server.listeners('connection') as ((socket: Socket) => void)[];
  server.removeAllListeners('connection');
  const table = new ConnectionTable();
  server.on('connection', (socket: Socket) => {
    const address = socket.remoteAddress ?? '';
    const mine = table.held(address);
    const reclaimed = mine < limits.perAddress && table.open >= limits.connections ? table.reclaimFor(address) : undefined;
    if (reclaimed) {
      table.remove(reclaimed);
      reclaimed.socket.destroy();
      onTurnedAway('reclaimed');
    }
    if (table.open >= limits.connections || mine >= limits.perAddress) {
      onTurnedAway('refused');
      const why = mine >= limits.perAddress ? `${mine} connections open from your address, its maximum (http.limits.connectionsperaddress)` : `its maximum of ${limits.connections} connections open (http.limits.connections)`;
      return plainHTTP ? answerAndClose(socket, 503, 'UNAVAILABLE', `the registry has ${why}: try again shortly`) : socket.destroy();
    }
    const connection = table.add(socket);
    socket.once('close', () => table.remove(connection));
    for (const listener of serve) listener.call(server, socket);
  });
  // which connections serve a request: the idle ones are reclaimed first
  server.prependListener('request', (req: IncomingMessage, res: ServerResponse) => res.once('close', table.requestStarted(req.socket)));
}

/** how long a client turned away before any request has to read its answer before the socket is closed anyway */
const LINGER_MS = 1000;

/**
 * Answers on a connection no request of which is served (turned away, head too slow or
 * malformed) with the registry's error JSON, then closes it. What the client still sends is read
 * and dropped, so the close does not reset the connection before the client reads the answer.
 */
export function answerAndClose(socket: Socket, status: number, code: string, message: string): void {
  const body = JSON.stringify({ errors: [{ code, message, detail: null }] });
  socket.on('error', () => socket.destroy());
  socket.resume();
  socket.setTimeout(LINGER_MS, () => socket.destroy());
  if (!socket.writable) return void socket.destroy();
  socket.end(
    `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nContent-Type: application/json\r\n${status === 503 ? 'Retry-After: 1\r\n' : ''}Connection: close\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
  );
}

/**
 * Node's `clientError`: a request head that did not arrive in time (408) or could not be parsed
 * (400, 431) gets the registry's error JSON instead of the web framework's.
 */
export function answerClientError(err: NodeJS.ErrnoException, socket: Socket, limits: ConnectionLimits): void {
  if (err.code === 'ECONNRESET' || socket.destroyed) return;
  if (err.code === 'ERR_HTTP_REQUEST_TIMEOUT') {
    return answerAndClose(socket, 408, 'UNKNOWN', `the request line and headers did not arrive within ${limits.headerTimeoutMs / 1000} s (http.limits.headertimeout)`);
  }
  if (err.code === 'HPE_HEADER_OVERFLOW') return answerAndClose(socket, 431, 'UNSUPPORTED', 'the request headers are too large');
  answerAndClose(socket, 400, 'UNSUPPORTED', `malformed HTTP request (${err.code ?? err.message})`);
}

/** a request that says it carries a body (Content-Length above 0, or chunked) */
function declaresBody(req: IncomingMessage): boolean {
  return req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
}

/**
 * True when the answer goes out before the request's body was read: the connection must close,
 * or Node would read and drop the rest of a body the client may trickle for ever (a 1 TB
 * `Content-Length` after a 401 held a socket for minutes).
 */
export function bodyLeftUnread(req: IncomingMessage): boolean {
  return req.httpVersionMajor === 1 && declaresBody(req) && !req.complete;
}

/**
 * Cuts the connection of an HTTP/1.1 request whose body comes slower than the minimum rate.
 * A window in which the registry itself was behind (bytes waiting in the request's buffer: not
 * read yet, or held back by backpressure from the store) does not count against the client.
 * HTTP/2 streams share one socket and are not watched (docs/security.md).
 */
export function watchBodyRate(req: IncomingMessage, rate: ConnectionLimits['bodyRate'], onSlow: (bytes: number) => void): void {
  if (rate.minimum === 0 || req.httpVersionMajor !== 1 || !declaresBody(req)) return;
  const { socket } = req;
  const least = (rate.minimum * rate.windowMs) / 1000;
  let seen = socket.bytesRead;
  const timer = setInterval(() => {
    const arrived = socket.bytesRead - seen;
    seen = socket.bytesRead;
    if (req.readableLength > 0 || arrived >= least) return;
    stop();
    onSlow(arrived);
    socket.destroy();
  }, rate.windowMs);
  timer.unref();
  // the socket outlives the request on keep-alive: its listener goes with the request
  const stop = () => {
    clearInterval(timer);
    socket.off('close', stop);
  };
  req.once('end', stop);
  req.once('close', stop);
  socket.once('close', stop);
}

/** what became of a connection beyond the limits: turned away, or let in by closing another */
export type TurnedAway = 'refused' | 'reclaimed';

/** at most one warning a minute about turned-away and reclaimed connections, with how many there were */
export function refusalLog(warn: (fields: object, message: string) => void, limit: number, everyMs = 60_000): (how: TurnedAway) => void {
  const counts = { refused: 0, reclaimed: 0 };
  let last = -Infinity;
  return (how) => {
    counts[how]++;
    const now = Date.now();
    if (now - last < everyMs) return;
    warn({ limit, ...counts }, 'connection limit reached (http.limits.connections): new connections are turned away, or let in by closing one of the address holding the most');
    last = now;
    counts.refused = counts.reclaimed = 0;
  };
}
