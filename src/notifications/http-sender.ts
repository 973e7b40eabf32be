/**
 * The last link of an endpoint's chain: one HTTP delivery attempt of an envelope. A 2xx or 3xx
 * answer, after following redirects, delivers it (spec 3.3); anything else, or a transport error,
 * is a failed attempt. The timeout bounds the whole attempt, redirects and the answer included.
 *
 * node:http rather than fetch: fetch joins a header's values into one line ("one, two"), while
 * Distribution (Go) sends every configured value on its own line, and fetch cannot take this
 * endpoint's own keep-alive agent (docs/decisions.md, "Notifications").
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { EVENTS_MEDIA_TYPE } from './events.js';
import type { Outcome } from './metrics.js';
import type { EndpointOptions } from './options.js';

/** the most redirects followed for one delivery (Go's http.Client stops after 10 as well) */
const MAX_REDIRECTS = 10;

interface Hop {
  url: URL;
  method: string;
  body?: Buffer;
}

export class HttpSender {
  private readonly agent: HttpAgent;
  private readonly origin: string;

  /** `contentType`: the body's media type (default Distribution's envelope) */
  constructor(
    private readonly options: Pick<EndpointOptions, 'url' | 'headers' | 'timeout'>,
    private readonly contentType: string = EVENTS_MEDIA_TYPE,
  ) {
    const agentOptions = { keepAlive: true, maxSockets: 1 };
    this.agent = options.url.startsWith('https:') ? new HttpsAgent(agentOptions) : new HttpAgent(agentOptions);
    this.origin = new URL(options.url).origin;
  }

  /** posts `body`; never throws: a timeout, the stop or a transport problem is an error outcome */
  async post(body: Buffer, stop: AbortSignal): Promise<Outcome> {
    const { signal, timedOut, release } = attemptSignal(stop, this.options.timeout);
    try {
      let hop: Hop = { url: new URL(this.options.url), method: 'POST', body };
      for (let n = 0; ; n++) {
        const res = await this.send(hop, signal);
        res.resume(); // the answer's body is not needed
        const next = redirect(res, hop);
        if (!next) {
          await finished(res);
          signal.throwIfAborted();
          const status = res.statusCode ?? 0;
          return { ok: status >= 200 && status < 400, status };
        }
        if (n >= MAX_REDIRECTS) return { ok: false, error: new Error(`stopped after ${MAX_REDIRECTS} redirects`) };
        hop = next;
      }
    } catch (err) {
      if (timedOut()) return { ok: false, error: new Error(`timeout after ${this.options.timeout}ms`) };
      return { ok: false, error: stop.aborted ? new Error('endpoint stopped') : (err as Error) };
    } finally {
      release();
    }
  }

  /** releases the keep-alive connection */
  close(): void {
    this.agent.destroy();
  }

  private send({ url, method, body }: Hop, signal: AbortSignal): Promise<IncomingMessage> {
    const headers: Record<string, string | string[]> = { ...this.options.headers };
    headers['user-agent'] ??= 'berth-notifications';
    if (body) {
      headers['content-type'] = this.contentType;
      headers['content-length'] = String(body.length);
    }
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    // the endpoint's own agent only for its own origin; a redirect elsewhere gets a one-off connection
    const agent = url.origin === this.origin ? this.agent : undefined;
    return new Promise((resolve, reject) => {
      const req = send(url, { method, headers, signal, agent }, (res) => {
        res.on('error', () => undefined); // an abort mid-answer is reported through `signal`, never as an unhandled error
        resolve(res);
      });
      req.on('error', reject);
      req.end(body);
    });
  }
}

/**
 * Where a redirect answer leads, as Go's http.Client follows it: 307 and 308 repeat the POST, the
 * others become a GET without body. undefined for a final answer (a 3xx without Location, or 304).
 */
function redirect(res: IncomingMessage, from: Hop): Hop | undefined {
  const status = res.statusCode ?? 0;
  const location = res.headers.location;
  if (status < 300 || status >= 400 || status === 304 || !location) return undefined;
  const url = new URL(location, from.url);
  return status === 307 || status === 308 ? { ...from, url } : { url, method: 'GET' };
}

/**
 * One attempt's signal: aborted by the endpoint's stop or by AbortSignal.timeout. Listeners, not
 * AbortSignal.any, so that nothing stays attached to the long-lived stop signal after the attempt.
 */
function attemptSignal(stop: AbortSignal, ms: number): { signal: AbortSignal; timedOut: () => boolean; release: () => void } {
  const attempt = new AbortController();
  const timeout = AbortSignal.timeout(ms);
  const onStop = () => attempt.abort(stop.reason);
  const onTimeout = () => attempt.abort(timeout.reason);
  stop.addEventListener('abort', onStop);
  timeout.addEventListener('abort', onTimeout);
  if (stop.aborted) onStop();
  return {
    signal: attempt.signal,
    timedOut: () => timeout.aborted && attempt.signal.reason === timeout.reason,
    release() {
      stop.removeEventListener('abort', onStop);
      timeout.removeEventListener('abort', onTimeout);
    },
  };
}

function finished(res: IncomingMessage): Promise<void> {
  return new Promise((resolve, reject) => {
    if (res.complete) return resolve();
    res.once('end', resolve);
    res.once('close', resolve);
    res.once('error', reject);
  });
}
