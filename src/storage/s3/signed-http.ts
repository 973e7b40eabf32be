/**
 * Reads from the bucket (GetObject, HeadObject, ListObjectsV2, the streamed blob reads) as plain
 * HTTP requests with undici, signed with the SDK's own SigV4 signer, instead of through the SDK
 * client. The client's middleware stack (endpoint rules, serializers, retry strategy, node:http)
 * costs milliseconds of CPU per call: a manifest GET is three small reads, and berth spent more on
 * them than radosgw did (docs/decisions.md, "S3 reads without the SDK client"). Signing costs
 * some 70 µs. Writes and multipart operations stay with the SDK.
 *
 * What is kept from the SDK: credentials (the client's provider, refreshed as the client refreshes
 * them), the endpoint and addressing (path style, virtual host, dual stack...: taken once from a
 * URL the SDK pre-signs) and the signing region.
 */
import { createHash, createHmac } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { GetObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { SignatureV4 } from '@smithy/signature-v4';
import type { Logger } from 'pino';
import { Agent, request } from 'undici';
import { StorageUnavailableError } from '../driver.js';
import { NAME, toStorageError, type SignedReads, type SignedResponse } from './client.js';

export interface SignedHttpOptions {
  bucket: string;
  skipverify: boolean;
  /** attempts per request, retries included, as the SDK client's */
  maxAttempts: number;
  /** a request that needed retries is logged here once it ends, as the SDK client's are */
  logger?: Pick<Logger, 'warn'>;
}

/** where the bucket's objects are: `base` + the encoded key is an object's URL */
interface Endpoint {
  base: URL;
  signer: SignatureV4;
}

/** a key the SDK pre-signs once to show the bucket's URL layout (never requested) */
const PROBE_KEY = 'berth-endpoint-probe';

/** the SDK's hash interface over node:crypto */
class Sha256 {
  private readonly hash;
  constructor(secret?: string | ArrayBuffer | ArrayBufferView) {
    this.hash = secret === undefined ? createHash('sha256') : createHmac('sha256', bytes(secret));
  }
  update(data: string | ArrayBuffer | ArrayBufferView): void {
    this.hash.update(bytes(data));
  }
  async digest(): Promise<Uint8Array> {
    return this.hash.digest();
  }
}

function bytes(data: string | ArrayBuffer | ArrayBufferView): string | Uint8Array {
  if (typeof data === 'string') return data;
  return ArrayBuffer.isView(data) ? new Uint8Array(data.buffer, data.byteOffset, data.byteLength) : new Uint8Array(data);
}

/** S3's encoding of a key in a URL path: every byte but unreserved characters and '/' */
function encodeKey(key: string): string {
  return key
    .split('/')
    .map((segment) => encodeURIComponent(segment).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`))
    .join('/');
}

export class SignedHttp implements SignedReads {
  private readonly dispatcher: Agent;
  private endpoint?: Promise<Endpoint>;

  constructor(
    private readonly client: S3Client,
    private readonly options: SignedHttpOptions,
  ) {
    this.dispatcher = new Agent({
      keepAliveTimeout: 30_000,
      // the SDK client's limits: 10 s to connect, no byte for 120 s fails the request
      headersTimeout: 120_000,
      bodyTimeout: 120_000,
      connect: { timeout: 10_000, rejectUnauthorized: !options.skipverify },
    });
  }

  private resolveEndpoint(): Promise<Endpoint> {
    this.endpoint ??= (async () => {
      const url = new URL(await getSignedUrl(this.client, new GetObjectCommand({ Bucket: this.options.bucket, Key: PROBE_KEY }), { expiresIn: 60 }));
      // X-Amz-Credential: <key id>/<date>/<region>/s3/aws4_request
      const region = url.searchParams.get('X-Amz-Credential')?.split('/').at(-3);
      if (!url.pathname.endsWith(`/${PROBE_KEY}`) || !region) throw new Error(`cannot tell the bucket's URL layout from ${url.origin}${url.pathname}`);
      const base = new URL(url.origin);
      base.pathname = url.pathname.slice(0, -PROBE_KEY.length);
      const signer = new SignatureV4({ credentials: this.client.config.credentials, region, service: 's3', sha256: Sha256, uriEscapePath: false, applyChecksum: false });
      return { base, signer };
    })().catch((err) => {
      this.endpoint = undefined; // tried again on the next request
      throw err;
    });
    return this.endpoint;
  }

  /**
   * A signed GET or HEAD of `key` ('' for the bucket itself, with `query` for a listing). Network
   * failures, 5xx and throttling are retried with back-off before any byte is handed on; what still
   * fails is StorageUnavailableError. Other answers (404, 416...) are returned with their body.
   */
  async send(what: string, method: 'GET' | 'HEAD', key: string, query: Record<string, string> = {}, headers: Record<string, string> = {}): Promise<SignedResponse> {
    let endpoint: Endpoint;
    try {
      endpoint = await this.resolveEndpoint();
    } catch (err) {
      throw toStorageError(err, what);
    }
    const { base, signer } = endpoint;
    const path = base.pathname + encodeKey(key);
    for (let attempt = 1; ; attempt++) {
      let failure: string;
      try {
        const signed = await signer.sign({
          method,
          protocol: base.protocol,
          hostname: base.hostname,
          port: base.port ? Number(base.port) : undefined,
          path,
          query,
          headers: { ...headers, host: base.host, 'x-amz-content-sha256': 'UNSIGNED-PAYLOAD' },
        });
        const search = new URLSearchParams(query).toString().replace(/\+/g, '%20');
        const res = await request(`${base.origin}${path}${search ? `?${search}` : ''}`, { method, headers: signed.headers, dispatcher: this.dispatcher });
        if (res.statusCode < 500 && res.statusCode !== 429) {
          if (attempt > 1) this.options.logger?.warn({ driver: NAME, operation: what.split(' ')[0], attempts: attempt }, 'S3 request succeeded after retries');
          return { status: res.statusCode, headers: res.headers, body: res.body };
        }
        await res.body.dump();
        failure = `status ${res.statusCode}`;
      } catch (err) {
        if (!isNetworkError(err)) throw toStorageError(err, what);
        failure = (err as Error).message;
      }
      if (attempt >= this.options.maxAttempts) {
        if (attempt > 1) this.options.logger?.warn({ driver: NAME, operation: what.split(' ')[0], attempts: attempt, error: failure }, 'S3 request failed after retries');
        throw new StorageUnavailableError(`${NAME}: ${what}: ${failure} (after ${attempt} attempts)`, NAME);
      }
      await sleep(Math.min(5_000, 100 * 2 ** (attempt - 1)) * (0.5 + Math.random() / 2));
    }
  }

  close(): Promise<void> {
    return this.dispatcher.close();
  }
}

/** undici's and Node's errors of the connection itself (refused, reset, timed out), not the SDK's */
function isNetworkError(err: unknown): boolean {
  const code = (err as { code?: string })?.code ?? '';
  return code.startsWith('UND_ERR') || /^E[A-Z]+$/.test(code);
}
