/**
 * URLs the registry hands out (Location headers). Absolute by default, built from `http.host` or
 * from the request (honouring X-Forwarded-Proto/-Host from a proxy); relative with `http.relativeurls`.
 */
import type { FastifyRequest } from 'fastify';
import { firstValue } from './headers.js';

export interface URLOptions {
  host?: string;
  /** http.prefix, normalised (see normalisePrefix) */
  prefix: string;
  relative: boolean;
}

export class URLBuilder {
  constructor(private readonly options: URLOptions) {}

  /** `path` is below /v2/, e.g. `/v2/<name>/blobs/<digest>` */
  build(req: FastifyRequest, path: string, query?: Record<string, string>): string {
    const search = query ? `?${new URLSearchParams(query).toString()}` : '';
    const local = `${this.options.prefix}${path}${search}`;
    if (this.options.relative) return local;
    return `${this.origin(req)}${local}`;
  }

  /** always absolute (event URLs are links for a receiver elsewhere), whatever `relativeurls` says */
  absolute(req: FastifyRequest, path: string): string {
    return `${this.origin(req)}${this.options.prefix}${path}`;
  }

  /**
   * The origins (`scheme://host[:port]`) a request to this registry is addressed to: `http.host`
   * when set, and the one the request names (Host, or X-Forwarded-Proto/-Host from a proxy)
   */
  ownOrigins(req: FastifyRequest): string[] {
    const named = this.requestOrigin(req);
    const configured = this.options.host && new URL(this.options.host).origin;
    return configured && configured !== named ? [configured, named] : [named];
  }

  private origin(req: FastifyRequest): string {
    if (this.options.host) return this.options.host.replace(/\/$/, '');
    return this.requestOrigin(req);
  }

  private requestOrigin(req: FastifyRequest): string {
    const proto = firstValue(req.headers['x-forwarded-proto']) ?? req.protocol;
    // HTTP/2 names the host in :authority, not Host (Fastify's req.host reads either)
    const host = firstValue(req.headers['x-forwarded-host']) ?? (req.host || 'localhost');
    return `${proto}://${host}`;
  }
}
