/** What an upstream's failures become for the client: the registry's own error codes, never the proxy's credentials. */
import { RegistryError } from '../registry/errors.js';

/**
 * The upstream answered something the cache cannot use (a refusal, a body that does not check
 * out, a host it may not send the cache to): the edge answers 502 UNAVAILABLE with this message,
 * where it maps StorageUnavailableError. The message names the upstream's host, never credentials.
 */
export class UpstreamError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UpstreamError';
  }
}

/** the upstream did not answer (connection refused, timeout, 5xx): the cache may answer instead */
export class UpstreamUnavailableError extends Error {
  constructor(
    readonly host: string,
    reason: string,
  ) {
    super(`the upstream registry ${host} is unavailable (${reason})`);
    this.name = 'UpstreamUnavailableError';
  }

  /** what the client gets when nothing in the cache can stand in */
  toRegistryError(what: string): RegistryError {
    return new RegistryError('UNAVAILABLE', `${what} is not in the cache and ${this.message}; try again later`, { headers: { 'retry-after': '5' } });
  }
}

/** the upstream answered something other than success or 404 */
export class UpstreamRefusedError extends Error {
  constructor(
    readonly host: string,
    readonly status: number,
    readonly retryAfter?: string,
  ) {
    super(`the upstream registry ${host} answered ${status}`);
    this.name = 'UpstreamRefusedError';
  }

  toClientError(): RegistryError | UpstreamError {
    if (this.status === 429) {
      return new RegistryError('TOOMANYREQUESTS', `the upstream registry ${this.host} limits requests (429): try again later`, {
        headers: this.retryAfter ? { 'retry-after': this.retryAfter } : {},
      });
    }
    if (this.status === 401 || this.status === 403) {
      return new UpstreamError(`the upstream registry ${this.host} refused this cache's pull (${this.status}): its credentials or access need fixing by the registry's operator`);
    }
    return new UpstreamError(`the upstream registry ${this.host} answered ${this.status}`);
  }
}

/** for `.catch()`: an upstream failure as the client's error (`what` is not cached), anything else as it is */
export function rethrowUpstream(what: string): (err: unknown) => never {
  return (err) => {
    if (err instanceof UpstreamUnavailableError) throw err.toRegistryError(what);
    if (err instanceof UpstreamRefusedError) throw err.toClientError();
    throw err;
  };
}

/** the upstream failed, refused or answered what the cache cannot use: a cached copy may stand in */
export function isUpstreamFailure(err: unknown): boolean {
  return err instanceof UpstreamUnavailableError || err instanceof UpstreamRefusedError || err instanceof UpstreamError;
}

/** a short reason for logs and messages: the network error's code, or the error's message */
export function describe(err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string } }).cause;
  return cause?.code ?? cause?.message ?? (err as Error).message;
}
