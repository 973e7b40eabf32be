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
import { pipeline, Readable, Transform } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import { GetObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { SignatureV4 } from '@smithy/signature-v4';
import type { Logger } from 'pino';
import { Agent, request } from 'undici';
import { shortLivedBytes } from '../short-lived-bytes.js';
import { StorageUnavailableError } from '../driver.js';
import { BodyReads, type StoreAnswer } from './body-reads.js';
import type { SignedReads, SignedResponse } from './bucket.js';
import { NAME, toStorageError } from './client.js';

export interface SignedHttpOptions {
  bucket: string;
  skipverify: boolean;
  /** attempts per request, retries included, as the SDK client's */
  maxAttempts: number;
  /** a request that needed retries is logged here once it ends, as the SDK client's are */
  logger?: Pick<Logger, 'warn'>;
}

/** a streamed read's answer: the body to serve when the status is the one asked for */
export interface StreamedResponse {
  status: number;
  body: Readable;
  /** drops a body that is not served */
  discard(): Promise<void>;
}

/** where the bucket's objects are: `base` + the encoded key is an object's URL */
interface Endpoint {
  base: URL;
  signer: SignatureV4;
  /** streamed bodies over berth's own connections to `base` */
  bodies: BodyReads;
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
      return { base, signer, bodies: new BodyReads(base, { rejectUnauthorized: !this.options.skipverify }) };
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
  send(what: string, method: 'GET' | 'HEAD', key: string, query: Record<string, string> = {}, headers: Record<string, string> = {}): Promise<SignedResponse> {
    return this.sendAfter(undefined, what, method, key, query, headers);
  }

  /** send(), after a first attempt made elsewhere that failed with `firstFailure` (a status worth retrying), if any */
  private async sendAfter(firstFailure: string | undefined, what: string, method: 'GET' | 'HEAD', key: string, query: Record<string, string>, headers: Record<string, string>): Promise<SignedResponse> {
    let endpoint: Endpoint;
    try {
      endpoint = await this.resolveEndpoint();
    } catch (err) {
      throw toStorageError(err, what);
    }
    let failure = firstFailure;
    for (let made = firstFailure === undefined ? 0 : 1; ; ) {
      if (failure !== undefined) {
        if (made >= this.options.maxAttempts) {
          if (made > 1) this.options.logger?.warn({ driver: NAME, operation: what.split(' ')[0], attempts: made, error: failure }, 'S3 request failed after retries');
          throw new StorageUnavailableError(`${NAME}: ${what}: ${failure} (after ${made} attempts)`, NAME);
        }
        await backOff(made);
      }
      made++;
      try {
        const signed = await sign(endpoint, method, key, query, headers);
        const res = await request(`${endpoint.base.origin}${signed.target}`, { method, headers: signed.headers, dispatcher: this.dispatcher });
        if (res.statusCode < 500 && res.statusCode !== 429) {
          if (made > 1) this.options.logger?.warn({ driver: NAME, operation: what.split(' ')[0], attempts: made }, 'S3 request succeeded after retries');
          return { status: res.statusCode, headers: res.headers, body: res.body };
        }
        await res.body.dump();
        failure = `status ${res.statusCode}`;
      } catch (err) {
        if (!isNetworkError(err)) throw toStorageError(err, what);
        failure = (err as Error).message;
      }
    }
  }

  /**
   * A streamed GET of `key` (from `range` when given): read over berth's own connections into
   * reused buffers (body-reads.ts) when the store answers 200 (206 with a range) with a length, and
   * through send(), with its retries, otherwise.
   */
  async stream(what: string, key: string, range: string | undefined): Promise<StreamedResponse> {
    const expect = range ? 206 : 200;
    const headers: Record<string, string> = range ? { range } : {};
    let answer: StoreAnswer | undefined;
    try {
      const endpoint = await this.resolveEndpoint();
      const signed = await sign(endpoint, 'GET', key, {}, headers);
      answer = await endpoint.bodies.open(signed.target, signed.headers, expect);
    } catch {
      // no answer: the general path below says what is wrong, with its retries
    }
    if (answer && 'body' in answer) {
      const { body } = answer;
      return { status: expect, body, discard: async () => void body.destroy() };
    }
    // another status: final (404, 416...) as it is; worth retrying (5xx, 429) as the general
    // client's first attempt; the status asked for, in a form body-reads does not read (chunked),
    // asked again of the general client
    let firstFailure: string | undefined;
    if (answer && answer.status !== expect) {
      if (answer.status < 500 && answer.status !== 429) return { status: answer.status, body: Readable.from([]), discard: async () => undefined };
      firstFailure = `status ${answer.status}`;
    }
    const res = await this.sendAfter(firstFailure, what, 'GET', key, {}, headers);
    return { status: res.status, body: res.status === expect ? paced(res.body) : res.body, discard: () => res.body.dump() };
  }

  async close(): Promise<void> {
    const endpoint = await this.endpoint?.catch(() => undefined);
    await Promise.all([this.dispatcher.close(), endpoint?.bodies.close()]);
  }
}

/**
 * The general client's body with a scavenge every few MiB (src/runtime/gc-pacing.ts): each socket read of the
 * store's answer is a fresh Buffer, and left to V8 they pile up as external memory until a full
 * collection
 */
function paced(body: Readable): Readable {
  const counted = new Transform({
    transform(chunk: Buffer, _encoding, done) {
      shortLivedBytes(chunk.length);
      done(null, chunk);
    },
  });
  pipeline(body, counted, () => undefined);
  return counted;
}

/** a request for `key` signed with SigV4: its path and query, and its headers (host included) */
async function sign({ base, signer }: Endpoint, method: 'GET' | 'HEAD', key: string, query: Record<string, string>, headers: Record<string, string>): Promise<{ target: string; headers: Record<string, string> }> {
  const path = base.pathname + encodeKey(key);
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
  return { target: `${path}${search ? `?${search}` : ''}`, headers: signed.headers };
}

/** the pause after failed attempt number `attempt` (exponential, with jitter) */
function backOff(attempt: number): Promise<void> {
  return sleep(Math.min(5_000, 100 * 2 ** (attempt - 1)) * (0.5 + Math.random() / 2));
}

/** undici's and Node's errors of the connection itself (refused, reset, timed out), not the SDK's */
function isNetworkError(err: unknown): boolean {
  const code = (err as { code?: string })?.code ?? '';
  return code.startsWith('UND_ERR') || /^E[A-Z]+$/.test(code);
}
