/**
 * An HTTP relay in front of a real upstream registry, for the pull-through cache's tests: it
 * records every request (so a test can count upstream GETs), can play dead (connections are cut
 * as they arrive), can cut the next large response in the middle of its body, and can be pointed
 * at a restarted upstream. The Host header is passed on, so an upstream that builds URLs from it
 * (a token realm, Location) names the relay.
 */
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

export interface Relay {
  url: string;
  /** `METHOD /path?query` of every request, in arrival order */
  requests: string[];
  /** where requests go (a restarted upstream has a new port) */
  target: string;
  /** true: open connections are cut, and every new one as it arrives, as by an upstream that is down */
  setDown(down: boolean): void;
  /** cuts the next response whose body exceeds `bytes`, after `bytes` of it */
  cutNextResponseAfter(bytes: number): void;
  count(pattern: RegExp): number;
  close(): Promise<void>;
}

export async function startRelay(target: string): Promise<Relay> {
  const sockets = new Set<Socket>();
  let cutAfter: number | undefined;
  let down = false;
  const relay: Relay = {
    url: '',
    requests: [],
    target,
    setDown(value) {
      down = value;
      if (down) for (const socket of sockets) socket.destroy();
    },
    cutNextResponseAfter(bytes) {
      cutAfter = bytes;
    },
    count(pattern) {
      return relay.requests.filter((r) => pattern.test(r)).length;
    },
    close() {
      for (const socket of sockets) socket.destroy();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
  const forward = (req: IncomingMessage, res: ServerResponse) => {
    relay.requests.push(`${req.method} ${req.url}`);
    const to = new URL(relay.target);
    const upstream = request({ host: to.hostname, port: to.port, method: req.method, path: req.url, headers: req.headers }, (answer) => {
      res.writeHead(answer.statusCode ?? 502, answer.headers);
      const limit = cutAfter !== undefined && req.method !== 'HEAD' && Number(answer.headers['content-length'] ?? 0) > cutAfter ? cutAfter : undefined;
      if (limit !== undefined) cutAfter = undefined;
      let sent = 0;
      answer.on('data', (chunk: Buffer) => {
        if (limit !== undefined && sent + chunk.length > limit) {
          res.write(chunk.subarray(0, limit - sent));
          res.socket?.destroy();
          answer.destroy();
          return;
        }
        sent += chunk.length;
        if (!res.write(chunk)) {
          answer.pause();
          res.once('drain', () => answer.resume());
        }
      });
      answer.on('end', () => res.end());
    });
    upstream.on('error', () => res.socket?.destroy());
    req.pipe(upstream);
  };
  const server: Server = createServer((req, res) => forward(req, res));
  server.on('connection', (socket) => {
    if (down) return socket.destroy();
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  relay.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  return relay;
}
