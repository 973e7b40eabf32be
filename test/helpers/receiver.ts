/**
 * A notification endpoint for tests: a real HTTP listener on 127.0.0.1 that records every request
 * and answers as `respond` says (status, delay, redirect), so tests can script failures.
 */
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import { freePort } from './ports.js';

export interface ReceivedRequest {
  method: string;
  path: string;
  headers: IncomingHttpHeaders;
  rawHeaders: string[];
  body: string;
  /** the status the receiver answered with */
  status: number;
}

/** what to do with the n-th request (0-based) */
export type Respond = (n: number, req: { method: string; path: string }) => { status?: number; delayMs?: number; location?: string; hang?: boolean };

export interface Receiver {
  url: string;
  port: number;
  requests: ReceivedRequest[];
  /** events of every envelope answered with 2xx (the ones the registry counts as delivered) */
  delivered(): Record<string, unknown>[];
  /** resolves once `predicate` holds, checking as requests arrive; rejects after `ms` */
  waitFor(predicate: () => boolean, ms?: number, what?: string): Promise<void>;
  close(): Promise<void>;
}

export async function startReceiver(respond: Respond = () => ({})): Promise<Receiver> {
  const requests: ReceivedRequest[] = [];
  const waiters = new Set<() => void>();
  const hanging = new Set<ServerResponse>();
  let count = 0;
  const server: Server = createServer((req, res) => {
    const n = count++;
    const chunks: Buffer[] = [];
    let gone = false;
    res.on('close', () => (gone = !res.writableFinished));
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const path = req.url ?? '/';
      const plan = respond(n, { method: req.method ?? '', path });
      const status = plan.status ?? 200;
      const finish = () => {
        if (gone || res.destroyed) return; // the client gave up (timeout): nothing was answered
        requests.push({ method: req.method ?? '', path, headers: req.headers, rawHeaders: req.rawHeaders, body: Buffer.concat(chunks).toString(), status });
        res.writeHead(status, plan.location ? { location: plan.location } : {});
        res.end();
        for (const w of waiters) w();
      };
      if (plan.hang) {
        hanging.add(res);
        return;
      }
      if (plan.delayMs) setTimeout(finish, plan.delayMs);
      else finish();
    });
  });
  const port = await freePort();
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve());
  });
  const url = `http://127.0.0.1:${port}`;
  return {
    url,
    port,
    requests,
    delivered() {
      return requests
        .filter((r) => r.method === 'POST' || r.method === 'GET')
        .filter((r) => r.status >= 200 && r.status < 300 && r.body !== '')
        .flatMap((r) => (JSON.parse(r.body) as { events: Record<string, unknown>[] }).events);
    },
    waitFor(predicate, ms = 5000, what = 'condition') {
      if (predicate()) return Promise.resolve();
      return new Promise((resolve, reject) => {
        const check = () => {
          if (!predicate()) return;
          cleanup();
          resolve();
        };
        const poll = setInterval(check, 20);
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`timed out after ${ms} ms waiting for ${what}; received ${requests.length} requests`));
        }, ms);
        const cleanup = () => {
          clearInterval(poll);
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
      });
    },
    async close() {
      for (const res of hanging) res.destroy();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

/** polls `predicate` every 10 ms until it holds; rejects after `ms` */
export async function eventually(predicate: () => boolean, ms = 5000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + ms;
  while (!predicate()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}
