/**
 * The upstream registry's client: undici's request (bodies as Node streams: a blob's bytes reach
 * the cache without fetch's web streams, most of a cold pull's CPU before; the GET of a blob the
 * cache fetches goes over blob-get.ts's own connections, into buffers it reuses) with a deadline
 * on every request, and the
 * authentication real registries ask for. Anonymous first; on a 401 the challenge decides: Basic
 * gets the configured credentials, Bearer a token from the realm for `repository:<name>:pull`
 * (with the credentials when set). Tokens are cached per scope until shortly before they expire,
 * and concurrent requests that need the same token share one token request. Once the upstream
 * is known to want tokens, requests get one before they are sent (no 401 round trip per pull).
 *
 * Credentials never leave this file except in the Authorization header of requests to the
 * upstream and to a token realm it may name (hosts.ts); a realm on another host is refused, and
 * logged once. Redirects are followed only for blob bodies, only to allowed hosts, and without
 * the Authorization header unless they stay on the upstream's origin.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { Readable } from 'node:stream';
import type { Logger } from 'pino';
import { request as send } from 'undici';
import { getBlob } from './blob-get.js';
import { parseChallenge, type Challenge } from './challenge.js';
import { AllowedHosts, knownRedirectHosts } from './hosts.js';
import { describe, UpstreamError, UpstreamRefusedError, UpstreamUnavailableError } from './errors.js';

export interface UpstreamOptions {
  remoteurl: string;
  username?: string;
  password?: string;
  /** the repository's name upstream (a mirror under a prefix drops it); default: the same */
  remoteName?: (local: string) => string;
  /** manifest HEAD (the tag check), blob HEAD, tags list, token requests: past this, the cache answers instead */
  checkTimeoutMs: number;
  /** manifest and blob GETs: the time until the response headers (a blob's body then has its own idle timer) */
  fetchTimeoutMs: number;
  /** hosts besides the upstream's own (and its domain's) whose token realm may get the credentials */
  realmhosts?: readonly string[];
  /** hosts besides the upstream's own (and its domain's) a blob download may be redirected to */
  redirecthosts?: readonly string[];
  /** who asks, and where its credentials are configured, for the log of a refusal (default: the pull-through cache, `proxy`) */
  client?: { name: string; keys: string; may: string };
}

export interface UpstreamRequest {
  /** GET and HEAD for the cache; replication (src/replication/) also writes to its remote */
  method: 'GET' | 'HEAD' | 'PUT' | 'POST' | 'PATCH' | 'DELETE';
  /** the repository (for the token's scope) */
  repository: string;
  /** the token scope when not `repository:<name>:pull` (the catalog's, or a push's `pull,push`) */
  scope?: string;
  /** a write's body, made again for each send (a 401 is answered by sending again) */
  body?: () => Buffer | Readable;
  /** the path below the upstream's /v2/, e.g. `library/alpine/manifests/latest` */
  path: string;
  headers?: Record<string, string>;
  timeoutMs: number;
  /** aborts the request and its body (a blob fetch's idle timer) */
  signal?: AbortSignal;
  /** a blob body: redirects to allowed hosts are followed (a CDN); any other request's redirect is a refusal */
  followRedirects?: boolean;
  /**
   * a GET of a whole blob's body (the cache's fetch): read over a connection of berth's own into
   * buffers the fetch reuses (blob-get.ts; the body is then a BlobBody); undici otherwise
   */
  ownBuffers?: boolean;
}

/** the upstream's answer: its status, headers and body (a Node stream) */
export class UpstreamResponse {
  readonly ok: boolean;
  readonly headers: { get(name: string): string | null };

  constructor(
    /** where it came from (redirect targets are resolved against it) */
    readonly url: URL,
    readonly status: number,
    headers: IncomingHttpHeaders,
    readonly body: Readable,
  ) {
    this.ok = status >= 200 && status < 300;
    this.headers = {
      get: (name) => {
        const value = headers[name.toLowerCase()];
        return value === undefined ? null : Array.isArray(value) ? value.join(', ') : value;
      },
    };
  }

  /** drops a body that is not read: its connection is closed, not left holding what is unread */
  cancel(): void {
    this.body.on('error', () => undefined); // undici's body reports its own destruction as an AbortError
    this.body.destroy();
  }
}

interface CachedToken {
  token: string;
  /** ms since the epoch after which the token is not used any more */
  until: number;
}

/** a token is not used in its last seconds: a request sent with it must still arrive in time */
const TOKEN_MARGIN_MS = 10_000;
/** the spec's default lifetime when the token response gives none */
const DEFAULT_TOKEN_SECONDS = 60;
/** the largest token response read (a token is a few KiB) */
const TOKEN_LIMIT = 1024 * 1024;
/** redirects followed for one blob download */
const MAX_REDIRECTS = 5;
const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);

export class Upstream {
  readonly host: string;
  private readonly base: string;
  private readonly basic?: string;
  /** what the upstream asked for last: undefined until its first 401 */
  private challenge?: Challenge;
  private readonly tokens = new Map<string, CachedToken>();
  private readonly tokenRequests = new Map<string, Promise<string>>();
  /** refusals logged since the last success: each status once */
  private readonly refusalsLogged = new Set<number>();
  private readonly realms: AllowedHosts;
  private readonly redirects: AllowedHosts;
  /** token realms and redirect targets refused so far: each host logged once */
  private readonly hostsRefused = new Set<string>();

  constructor(
    private readonly options: UpstreamOptions,
    private readonly logger: Logger,
  ) {
    const url = new URL(options.remoteurl);
    this.host = url.host;
    this.base = `${url.origin}${url.pathname.replace(/\/$/, '')}/v2/`;
    this.realms = new AllowedHosts(url, options.realmhosts ?? []);
    this.redirects = new AllowedHosts(url, [...knownRedirectHosts(options.remoteurl), ...(options.redirecthosts ?? [])]);
    if (options.username !== undefined && options.password !== undefined) {
      this.basic = `Basic ${Buffer.from(`${options.username}:${options.password}`).toString('base64')}`;
    }
  }

  /**
   * The upstream's answer: a success or a 404 (the caller decides what 404 means). Throws
   * UpstreamUnavailableError when it does not answer in time or fails (5xx), UpstreamRefusedError
   * for other statuses (401/403 after authenticating, 429).
   */
  async request(local: UpstreamRequest): Promise<UpstreamResponse> {
    const req = this.upstreamNamed(local);
    const scope = req.scope ?? `repository:${req.repository}:pull`;
    let authorization = await this.knownAuthorization(scope);
    let res = await this.send(req, authorization);
    if (res.status === 401) {
      const challenge = parseChallenge(res.headers.get('www-authenticate'));
      res.cancel();
      const retry = challenge && (await this.answer(challenge, scope, authorization));
      if (retry) {
        authorization = retry;
        res = await this.send(req, authorization);
      }
    }
    if (req.followRedirects) res = await this.followRedirects(res, req, authorization);
    if (res.ok || res.status === 404) {
      this.refusalsLogged.clear();
      return res;
    }
    res.cancel();
    if (res.status >= 500) throw new UpstreamUnavailableError(this.host, `it answered ${res.status}`);
    throw this.refused(res.status, res.headers.get('retry-after') ?? undefined);
  }

  /** the answer at the end of the redirects of a blob download, each to an allowed host */
  private async followRedirects(first: UpstreamResponse, req: UpstreamRequest, authorization: string | undefined): Promise<UpstreamResponse> {
    let res = first;
    for (let hops = 0; REDIRECT_STATUSES.has(res.status); hops++) {
      res.cancel();
      const location = res.headers.get('location');
      let target: URL | undefined;
      try {
        target = location ? new URL(location, res.url) : undefined;
      } catch {
        target = undefined;
      }
      if (!target || hops >= MAX_REDIRECTS || !this.redirects.allows(target)) throw this.redirectRefused(target, hops);
      // the credentials stay on the upstream's origin
      const headers: Record<string, string> = { 'user-agent': 'berth-pull-through-cache', ...req.headers };
      if (authorization && target.origin === new URL(this.base).origin) headers.authorization = authorization;
      res = await this.fetch(target, req.method, headers, req.timeoutMs, req.signal, `${req.method} of a redirected blob`, undefined, req.ownBuffers);
      if (!res.ok && res.status !== 404 && !REDIRECT_STATUSES.has(res.status)) {
        // not the upstream's own refusal (no credentials to fix): only the status is told, never the body
        res.cancel();
        throw new UpstreamError(`the upstream registry ${this.host} redirected a blob download to ${target.protocol}//${target.host}, which answered ${res.status}`);
      }
    }
    return res;
  }

  /** a redirect not followed: logged once per host; the client hears only that it was refused */
  private redirectRefused(target: URL | undefined, hops: number): UpstreamError {
    const where = target ? `${target.protocol}//${target.host}` : 'no valid location';
    if (!this.hostsRefused.has(`redirect ${where}`)) {
      this.hostsRefused.add(`redirect ${where}`);
      this.logger.error({ target: where, hops }, 'the upstream registry redirected a blob download to a host that is not allowed; not followed (add the host to redirecthosts if it serves the upstream\'s blobs)');
    }
    return new UpstreamError(`the upstream registry ${this.host} redirected a blob download to ${where}, which is not an allowed host; nothing was fetched from there`);
  }

  /** the request with the repository's upstream name, in the scope and the path */
  private upstreamNamed(req: UpstreamRequest): UpstreamRequest {
    const remote = this.options.remoteName?.(req.repository);
    if (remote === undefined || remote === req.repository) return req;
    const path = req.path.startsWith(`${req.repository}/`) ? `${remote}${req.path.slice(req.repository.length)}` : req.path;
    return { ...req, repository: remote, path };
  }

  /** the Authorization of a request for `scope` before the upstream asked: a token once it wants tokens */
  private async knownAuthorization(scope: string): Promise<string | undefined> {
    if (this.challenge?.scheme === 'bearer') return `Bearer ${await this.token(this.challenge, scope)}`;
    if (this.challenge?.scheme === 'basic') return this.basic;
    return undefined;
  }

  /** the Authorization that answers a 401's challenge; undefined when there is nothing better to send */
  private async answer(challenge: Challenge, scope: string, sent: string | undefined): Promise<string | undefined> {
    this.challenge = challenge;
    if (challenge.scheme === 'basic') return this.basic && sent !== this.basic ? this.basic : undefined;
    // a token that was refused is not asked for again from the cache
    const key = tokenKey(challenge, scope);
    if (sent?.startsWith('Bearer ')) this.tokens.delete(key);
    return `Bearer ${await this.token(challenge, scope)}`;
  }

  /** a token for `scope` from the challenge's realm: cached, and one request for all who need it now */
  private async token(challenge: Challenge, scope: string): Promise<string> {
    const key = tokenKey(challenge, scope);
    const cached = this.tokens.get(key);
    if (cached && cached.until > Date.now()) return cached.token;
    const pending = this.tokenRequests.get(key);
    if (pending) return pending;
    const request = this.fetchToken(challenge, scope).then(
      ({ token, until }) => {
        this.tokens.set(key, { token, until });
        return token;
      },
    );
    this.tokenRequests.set(key, request);
    try {
      return await request;
    } finally {
      this.tokenRequests.delete(key);
    }
  }

  private async fetchToken(challenge: Challenge, scope: string): Promise<CachedToken> {
    const { realm, service } = challenge.params;
    if (!realm) throw new UpstreamUnavailableError(this.host, 'its Bearer challenge names no realm');
    let url: URL;
    try {
      url = new URL(realm);
    } catch {
      throw new UpstreamUnavailableError(this.host, 'its Bearer challenge names a realm that is not a URL');
    }
    if (!this.realms.allows(url)) throw this.realmRefused(url);
    if (service) url.searchParams.set('service', service);
    url.searchParams.set('scope', scope);
    const headers: Record<string, string> = this.basic ? { authorization: this.basic } : {};
    const res = await this.fetch(url, 'GET', headers, this.options.checkTimeoutMs, AbortSignal.timeout(this.options.checkTimeoutMs), 'token request');
    if (!res.ok) {
      res.cancel();
      if (res.status >= 500) throw new UpstreamUnavailableError(this.host, `its token service answered ${res.status}`);
      throw this.refused(res.status, res.headers.get('retry-after') ?? undefined);
    }
    const body = (await this.readJson(res, TOKEN_LIMIT, 'token response')) as { token?: unknown; access_token?: unknown; expires_in?: unknown } | null;
    const token = typeof body?.token === 'string' ? body.token : body?.access_token;
    if (typeof token !== 'string' || token === '') throw new UpstreamUnavailableError(this.host, 'its token service answered without a token');
    const seconds = typeof body?.expires_in === 'number' && body.expires_in > 0 ? body.expires_in : DEFAULT_TOKEN_SECONDS;
    return { token, until: Date.now() + Math.max(seconds * 1000 - TOKEN_MARGIN_MS, seconds * 500) };
  }

  /** a token realm on another host: nothing is sent there; logged once per host */
  private realmRefused(url: URL): UpstreamError {
    const where = `${url.protocol}//${url.host}`;
    if (!this.hostsRefused.has(`realm ${where}`)) {
      this.hostsRefused.add(`realm ${where}`);
      this.logger.error({ realm: where }, 'the upstream registry names a token realm on another host; no credentials or token request were sent there (if that host is the upstream\'s token service, add it to realmhosts)');
    }
    return new UpstreamError(`the upstream registry ${this.host} names its token service at ${where}, another host; nothing was sent there (the registry's operator may allow it with realmhosts)`);
  }

  private send(req: UpstreamRequest, authorization: string | undefined): Promise<UpstreamResponse> {
    const headers: Record<string, string> = { 'user-agent': 'berth-pull-through-cache', ...req.headers };
    if (authorization) headers.authorization = authorization;
    return this.fetch(new URL(req.path, this.base), req.method, headers, req.timeoutMs, req.signal, `${req.method} ${req.path}`, req.body?.(), req.ownBuffers);
  }

  /** the upstream's base URL (`…/v2/`): a Location it answers must stay on its origin to get the credentials */
  get baseURL(): URL {
    return new URL(this.base);
  }

  /** one request with a deadline for the response headers; failures become UpstreamUnavailableError */
  private async fetch(url: URL, method: UpstreamRequest['method'], headers: Record<string, string>, timeoutMs: number, signal: AbortSignal | undefined, what: string, body?: Buffer | Readable, ownBuffers = false): Promise<UpstreamResponse> {
    const deadline = new AbortController();
    const timer = setTimeout(() => deadline.abort(), timeoutMs);
    const aborts = signal ? AbortSignal.any([signal, deadline.signal]) : deadline.signal;
    try {
      if (ownBuffers && method === 'GET') {
        const answer = await getBlob(url, headers, aborts);
        if (answer.status !== 200 || answer.body) return new UpstreamResponse(url, answer.status, answer.headers, answer.body ?? Readable.from([]));
        // a 200 whose body is framed otherwise (chunked, or up to the close): asked again through undici
      }
      // undici's request follows no redirect: followRedirects() checks each target. The signal
      // aborts the body too (a blob fetch's idle timer, a client leaving).
      const res = await send(url, { method, headers, body, signal: aborts });
      return new UpstreamResponse(url, res.statusCode, res.headers, res.body);
    } catch (err) {
      throw this.unavailable(deadline.signal.aborted ? `no answer to ${what} within ${timeoutMs / 1000}s` : describe(err));
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * The whole body of a response, at most `limit` bytes: a body declared or found longer is
   * cancelled where it passes the limit (an endless body costs `limit`, not all it sends). The
   * request's signal bounds the time; a body that breaks off is the upstream's failure.
   */
  async readBounded(res: UpstreamResponse, limit: number, what: string): Promise<Buffer> {
    const tooLong = () => new UpstreamError(`the upstream's ${what} is over the ${limit}-byte limit`);
    if (Number(res.headers.get('content-length') ?? 0) > limit) {
      res.cancel();
      throw tooLong();
    }
    const chunks: Buffer[] = [];
    let total = 0;
    try {
      for await (const chunk of res.body as AsyncIterable<Buffer>) {
        total += chunk.byteLength;
        if (total > limit) throw tooLong(); // leaving the loop destroys the body
        chunks.push(chunk);
      }
    } catch (err) {
      if (err instanceof UpstreamError) throw err;
      throw this.unavailable(`its answer broke off: ${describe(err)}`);
    }
    return Buffer.concat(chunks, total);
  }

  /** a JSON body of at most `limit` bytes (readBounded); one that does not parse is the upstream's failure, its text not repeated */
  async readJson(res: UpstreamResponse, limit: number, what: string): Promise<unknown> {
    const body = await this.readBounded(res, limit, what);
    try {
      return JSON.parse(body.toString('utf8')) as unknown;
    } catch {
      throw this.unavailable(`its ${what} is not JSON`);
    }
  }

  private unavailable(reason: string): UpstreamUnavailableError {
    this.logger.warn({ reason }, 'upstream registry unavailable');
    return new UpstreamUnavailableError(this.host, reason);
  }

  /** a refusal, logged once per status (until a request succeeds) with what to fix */
  private refused(status: number, retryAfter: string | undefined): UpstreamRefusedError {
    if ((status === 401 || status === 403) && !this.refusalsLogged.has(status)) {
      this.refusalsLogged.add(status);
      const { name, keys, may } = this.options.client ?? { name: 'the pull-through cache', keys: 'proxy', may: 'pull the repository' };
      const fix = this.basic
        ? `check ${keys}.username and ${keys}.password, and that the account may ${may}`
        : `the upstream needs credentials: set ${keys}.username and ${keys}.password`;
      this.logger.error({ status }, `the upstream registry refused ${name}'s request: ${fix}`);
    }
    return new UpstreamRefusedError(this.host, status, retryAfter);
  }
}

function tokenKey(challenge: Challenge, scope: string): string {
  return `${challenge.params.realm}\n${challenge.params.service ?? ''}\n${scope}`;
}
