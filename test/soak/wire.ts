/**
 * Every request of the soak goes through Wire: it keeps the time span, status and answering
 * instance (`x-served-by`, set by HAProxy on what a berth instance answered) of each 5xx, and each
 * request cut without an answer, so the run can hold them against the faults it injected.
 */

export interface Exchange {
  method: string;
  path: string;
  start: number;
  end: number;
  status?: number;
  /** the HAProxy server name of the berth instance that answered; absent: HAProxy's own answer */
  servedBy?: string;
  /** the start of the body (an error code and message) or the network error */
  detail: string;
}

export interface Reply {
  status: number;
  headers: Headers;
  body: Buffer;
  servedBy?: string;
  start: number;
  end: number;
}

/** a request that got no answer (connection refused or cut, timeout) */
export class CutError extends Error {
  constructor(readonly exchange: Exchange) {
    super(`${exchange.method} ${exchange.path}: no answer (${exchange.detail})`);
  }
}

export interface SendOptions {
  headers?: Record<string, string>;
  body?: Buffer;
  timeoutMs?: number;
}

export class Wire {
  requests = 0;
  readonly serverErrors: Exchange[] = [];
  readonly cuts: Exchange[] = [];
  /** every request that writes (not GET or HEAD), answered or cut: which repositories a kill may have left half-written */
  readonly writes: Exchange[] = [];

  constructor(readonly base: string) {}

  url(path: string): string {
    return new URL(path, this.base).toString();
  }

  async send(method: string, path: string, options: SendOptions = {}): Promise<Reply> {
    const start = Date.now();
    this.requests++;
    const target = new URL(path, this.base);
    const shortPath = `${target.pathname}${target.search.length > 80 ? `${target.search.slice(0, 80)}...` : target.search}`;
    try {
      const res = await fetch(target, {
        method,
        headers: options.headers,
        body: options.body as unknown as BodyInit | undefined,
        redirect: 'manual',
        signal: AbortSignal.timeout(options.timeoutMs ?? 90_000),
      });
      const body = Buffer.from(await res.arrayBuffer());
      const end = Date.now();
      const servedBy = res.headers.get('x-served-by') ?? undefined;
      if (method !== 'GET' && method !== 'HEAD') this.writes.push({ method, path: target.pathname, start, end, status: res.status, servedBy, detail: '' });
      if (res.status >= 500) {
        this.serverErrors.push({ method, path: shortPath, start, end, status: res.status, servedBy, detail: body.toString('utf8', 0, 300).replace(/\s+/g, ' ') });
      }
      return { status: res.status, headers: res.headers, body, servedBy, start, end };
    } catch (err) {
      const e = err as Error & { cause?: { code?: string; message?: string } };
      const exchange: Exchange = { method, path: shortPath, start, end: Date.now(), detail: e.cause?.code ?? e.cause?.message ?? e.name ?? e.message };
      this.cuts.push(exchange);
      if (method !== 'GET' && method !== 'HEAD') this.writes.push({ ...exchange, path: target.pathname });
      throw new CutError(exchange);
    }
  }
}
