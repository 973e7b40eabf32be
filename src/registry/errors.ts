/**
 * The registry's error vocabulary: the codes of spec section 7 that berth sends (not
 * MANIFEST_BLOB_UNKNOWN: spec 4.4 names BLOB_UNKNOWN for a manifest's missing blobs; see
 * docs/decisions.md). The core throws RegistryError; the HTTP edge (src/http/errors.ts) turns it
 * into a status and the JSON body of section 2.8.
 */

export const ERROR_MESSAGES = {
  BLOB_UNKNOWN: 'blob unknown to registry',
  BLOB_UPLOAD_INVALID: 'blob upload invalid',
  BLOB_UPLOAD_UNKNOWN: 'blob upload unknown to registry',
  DIGEST_INVALID: 'provided digest did not match uploaded content',
  MANIFEST_INVALID: 'manifest invalid',
  MANIFEST_UNKNOWN: 'manifest unknown',
  MANIFEST_UNVERIFIED: 'manifest failed signature verification',
  NAME_INVALID: 'invalid repository name',
  NAME_UNKNOWN: 'repository name not known to registry',
  PAGINATION_NUMBER_INVALID: 'invalid number of results requested',
  RANGE_INVALID: 'invalid content range',
  SIZE_INVALID: 'provided length did not match content length',
  TAG_INVALID: 'manifest tag did not match URI',
  UNAUTHORIZED: 'authentication required',
  DENIED: 'requested access to the resource is denied',
  UNSUPPORTED: 'The operation is unsupported.',
  TOOMANYREQUESTS: 'too many requests',
  /** not in the spec's table: a route that does not exist (clients treat unknown codes as UNKNOWN) */
  NOT_FOUND: 'no such route',
  /** not in the spec's table: the registry failed (storage down, a bug) */
  UNKNOWN: 'unknown error',
  /** not in the spec's table: the storage backend is temporarily unavailable (503, retryable) */
  UNAVAILABLE: 'service unavailable',
} as const;

export type ErrorCode = keyof typeof ERROR_MESSAGES;

export interface ErrorEntry {
  code: ErrorCode;
  message: string;
  detail?: unknown;
}

export class RegistryError extends Error {
  readonly code: ErrorCode;
  readonly detail: unknown;
  /** further errors answered in the same response (e.g. one BLOB_UNKNOWN per missing layer) */
  readonly more: ErrorEntry[];
  /** a status other than the code's usual one, where the spec asks for it (e.g. 400 BLOB_UNKNOWN on manifest PUT) */
  readonly status?: number;
  /** response headers that go with the error (WWW-Authenticate on 401, Retry-After on 429) */
  readonly headers: Record<string, string>;

  constructor(code: ErrorCode, message?: string, options: { detail?: unknown; status?: number; more?: ErrorEntry[]; cause?: unknown; headers?: Record<string, string> } = {}) {
    super(message ?? ERROR_MESSAGES[code], { cause: options.cause });
    this.name = 'RegistryError';
    this.code = code;
    this.detail = options.detail;
    this.status = options.status;
    this.more = options.more ?? [];
    this.headers = options.headers ?? {};
  }

  /** every error of this response, this one first */
  entries(): ErrorEntry[] {
    const first: ErrorEntry = { code: this.code, message: this.message };
    if (this.detail !== undefined) first.detail = this.detail;
    return [first, ...this.more];
  }

  /** several errors of one kind in one response; the first one's status applies */
  static many(entries: ErrorEntry[], status?: number): RegistryError {
    const [first, ...more] = entries;
    return new RegistryError(first.code, first.message, { detail: first.detail, status, more });
  }
}
