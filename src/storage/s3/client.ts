/**
 * The S3 client side of the driver: the SDK client built from the options (endpoint, TLS,
 * retries, logging), the mapping of SDK failures to storage errors, and `Bucket`, the object
 * operations on one bucket below the driver's root that the driver and the multipart writer share.
 */
import { Agent as HttpAgent } from 'node:http';
import type { Readable } from 'node:stream';
import { Agent as HttpsAgent } from 'node:https';
import { parseXML } from '@aws-sdk/xml-builder';
import {
  DeleteObjectCommand,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
  type ObjectCannedACL,
  type S3ClientConfig,
} from '@aws-sdk/client-s3';
import type { Logger } from 'pino';
import { PathNotFoundError, StorageError, StorageUnavailableError } from '../driver.js';

export const NAME = 's3';

/** storage.s3 (spec table 2.9) with the defaults the configuration fills in */
export interface S3Parameters {
  region: string;
  /** an S3-compatible store, e.g. "http://127.0.0.1:7480" or "minio.example.com:9000" */
  regionendpoint?: string;
  forcepathstyle: boolean;
  bucket: string;
  accesskey?: string;
  secretkey?: string;
  encrypt: boolean;
  /** the KMS key id, with encrypt */
  keyid?: string;
  secure: boolean;
  skipverify: boolean;
  /** bytes per part of a writer's multipart upload */
  chunksize: number;
  multipartcopychunksize: number;
  multipartcopymaxconcurrency: number;
  multipartcopythresholdsize: number;
  /** key prefix of everything the driver stores: '', '/registry', 'a/b' */
  rootdirectory: string;
  storageclass: 'STANDARD' | 'REDUCED_REDUNDANCY';
  useragent?: string;
  usedualstack?: boolean;
  accelerate?: boolean;
  usefipsendpoint: boolean;
  objectacl: ObjectCannedACL;
  /** 'off' or one of the SDK's debug levels */
  loglevel: string;
}

export interface S3DriverOptions extends S3Parameters {
  /** how long pre-signed redirect URLs stay valid (default 20 minutes) */
  redirectExpiryMs?: number;
  /** for loglevel other than off */
  logger?: Logger;
  /** attempts per request, retries included (default 5) */
  maxAttempts?: number;
  /** parts of one multipart upload (default S3's 10,000; tests lower it) */
  maxParts?: number;
  /** client overrides, for tests */
  clientConfig?: Partial<S3ClientConfig>;
}

/** the endpoint URL: regionendpoint with the scheme chosen by `secure` when it has none */
function endpointURL(p: S3Parameters): string | undefined {
  if (p.regionendpoint === undefined) return undefined;
  if (/^https?:\/\//.test(p.regionendpoint)) return p.regionendpoint;
  return `${p.secure ? 'https' : 'http'}://${p.regionendpoint}`;
}

function sdkLogger(level: string, logger: Logger | undefined): S3ClientConfig['logger'] {
  if (level === 'off' || logger === undefined) return undefined;
  const log = logger.child({ component: 's3-client', loglevel: level });
  return {
    trace: (...args: unknown[]) => log.trace({ sdk: args }),
    debug: (...args: unknown[]) => log.debug({ sdk: args }),
    info: (...args: unknown[]) => log.debug({ sdk: args }),
    warn: (...args: unknown[]) => log.warn({ sdk: args }),
    error: (...args: unknown[]) => log.error({ sdk: args }),
  };
}

export function buildS3Client(options: S3DriverOptions): S3Client {
  const endpoint = endpointURL(options);
  const agentOptions = { keepAlive: true, maxSockets: Math.max(64, options.multipartcopymaxconcurrency + 8) };
  const config: S3ClientConfig = {
    region: options.region,
    endpoint,
    forcePathStyle: options.forcepathstyle,
    useDualstackEndpoint: options.usedualstack,
    useAccelerateEndpoint: options.accelerate,
    useFipsEndpoint: options.usefipsendpoint,
    customUserAgent: options.useragent,
    credentials:
      options.accesskey && options.secretkey ? { accessKeyId: options.accesskey, secretAccessKey: options.secretkey } : undefined,
    // the SDK's default checksums (since 3.729) break S3-compatible stores (radosgw: 411
    // MissingContentLength; R2, MinIO, B2) and pre-signed GETs (x-amz-checksum-mode), on AWS too
    // (aws-sdk-js-v3#6810, #6994): sent and checked only where an operation requires them
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
    // throttling, 5xx and network errors are retried with exponential back-off (standard mode)
    maxAttempts: options.maxAttempts ?? 5,
    retryMode: 'standard',
    requestHandler: {
      connectionTimeout: 10_000,
      // no byte for this long on an open request: fail it (and retry) instead of hanging
      requestTimeout: 120_000,
      httpAgent: new HttpAgent(agentOptions),
      httpsAgent: new HttpsAgent({ ...agentOptions, rejectUnauthorized: !options.skipverify }),
    },
    logger: sdkLogger(options.loglevel, options.logger),
    ...options.clientConfig,
  };
  if (!options.secure && endpoint === undefined) {
    // native S3 over plain HTTP (spec 2.9: secure false)
    config.endpoint = `http://s3.${options.region}.amazonaws.com`;
  }
  const client = new S3Client(config);
  if (options.logger) logRetries(client, options.logger);
  return client;
}

/** a request the SDK had to send more than once is logged (once, when it ends) with its attempts */
function logRetries(client: S3Client, logger: Logger): void {
  client.middlewareStack.add(
    (next, context) => async (args) => {
      const attempts = (meta: unknown) => (meta as { $metadata?: { attempts?: number } } | undefined)?.$metadata?.attempts ?? 1;
      try {
        const out = await next(args);
        if (attempts(out.output) > 1) logger.warn({ driver: NAME, operation: context.commandName, attempts: attempts(out.output) }, 'S3 request succeeded after retries');
        return out;
      } catch (err) {
        if (attempts(err) > 1) logger.warn({ driver: NAME, operation: context.commandName, attempts: attempts(err), error: errorName(err) || String(err) }, 'S3 request failed after retries');
        throw err;
      }
    },
    { step: 'initialize', name: 'berthRetryLog' },
  );
}

export function httpStatus(err: unknown): number | undefined {
  return (err as { $metadata?: { httpStatusCode?: number } })?.$metadata?.httpStatusCode;
}

function errorName(err: unknown): string {
  return (err as { name?: string; Code?: string })?.Code ?? (err as { name?: string })?.name ?? '';
}

export function isNotFound(err: unknown): boolean {
  const name = errorName(err);
  return name === 'NoSuchKey' || name === 'NotFound' || name === 'NoSuchUpload' || httpStatus(err) === 404;
}

/** what the SDK could not do after its retries, as a StorageError the HTTP edge understands */
export function toStorageError(err: unknown, what: string): StorageError {
  if (err instanceof StorageError) return err;
  const status = httpStatus(err);
  const message = err instanceof Error ? err.message : String(err);
  const name = errorName(err);
  const throttled = status === 429 || status === 503 || /SlowDown|Throttl|RequestLimitExceeded/.test(name);
  if (throttled || status === undefined || status >= 500 || !(err instanceof S3ServiceException)) {
    // network errors, timeouts, 5xx and throttling that outlasted the retries: temporary
    return new StorageUnavailableError(`${NAME}: ${what}: ${name ? `${name}: ` : ''}${message}`, NAME, { cause: err });
  }
  return new StorageError(`${NAME}: ${what}: ${status} ${name}: ${message}`, NAME, { cause: err });
}

/** the headers of every object written (PutObject, CreateMultipartUpload, CopyObject) */
export interface WriteParams {
  StorageClass: S3Parameters['storageclass'];
  ACL: ObjectCannedACL;
  ServerSideEncryption?: 'AES256' | 'aws:kms';
  SSEKMSKeyId?: string;
}

/** an answer to a signed read */
export interface SignedResponse {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: Readable & { dump(): Promise<void>; text(): Promise<string>; arrayBuffer(): Promise<ArrayBuffer> };
}

/** reads without the SDK client (signed-http.ts) */
export interface SignedReads {
  send(what: string, method: 'GET' | 'HEAD', key: string, query?: Record<string, string>, headers?: Record<string, string>): Promise<SignedResponse>;
}

/** a key or common prefix of a listing */
export interface ListedObject {
  /** the whole key */
  key: string;
  size: number;
  modTime: Date;
}

/** one page of ListObjectsV2 */
export interface ListPage {
  /** the common prefixes (with a delimiter), whole, ending in the delimiter */
  prefixes: string[];
  objects: ListedObject[];
  /** the continuation token of the next page, when there is one */
  next?: string;
}

/** an element the XML parser hands back as one object or an array of them */
function many<T>(value: T | T[] | undefined): T[] {
  return value === undefined ? [] : Array.isArray(value) ? value : [value];
}

/** one bucket below a root directory: driver paths as keys, and the object operations on them */
export class Bucket {
  readonly name: string;
  /** '' or 'a/b/' */
  private readonly prefix: string;
  readonly writeParams: WriteParams;

  constructor(
    readonly client: S3Client,
    readonly http: SignedReads,
    options: S3Parameters,
  ) {
    this.name = options.bucket;
    const root = options.rootdirectory.replace(/^\/+|\/+$/g, '');
    this.prefix = root === '' ? '' : `${root}/`;
    this.writeParams = {
      StorageClass: options.storageclass,
      ACL: options.objectacl,
      ...(options.encrypt
        ? options.keyid
          ? { ServerSideEncryption: 'aws:kms' as const, SSEKMSKeyId: options.keyid }
          : { ServerSideEncryption: 'AES256' as const }
        : {}),
    };
  }

  /** driver path -> object key */
  key(path: string): string {
    return path === '/' ? this.prefix : this.prefix + path.slice(1);
  }

  /** key prefix of everything below a directory */
  dirPrefix(path: string): string {
    return path === '/' ? this.prefix : `${this.key(path)}/`;
  }

  /** `bucket/key`, URL-encoded per segment, for CopySource */
  copySource(path: string): string {
    return `${this.name}/${this.key(path).split('/').map(encodeURIComponent).join('/')}`;
  }

  /** runs one SDK call; what it could not do becomes a StorageError saying `what` */
  async send<T>(what: string, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (err) {
      throw toStorageError(err, what);
    }
  }

  /** size and time of the object at path, undefined when there is none */
  async head(path: string): Promise<{ size: number; modTime: Date } | undefined> {
    const what = `HeadObject ${path}`;
    const res = await this.http.send(what, 'HEAD', this.key(path));
    await res.body.dump();
    if (res.status === 404) return undefined;
    if (res.status !== 200) throw failure(res, what, '');
    return { size: Number(res.headers['content-length'] ?? 0), modTime: lastModified(res) };
  }

  async getObject(path: string): Promise<Buffer> {
    const what = `GetObject ${path}`;
    const res = await this.http.send(what, 'GET', this.key(path));
    if (res.status === 200) return Buffer.from(await res.body.arrayBuffer());
    const body = await res.body.text();
    if (res.status === 404) throw new PathNotFoundError(path, NAME);
    throw failure(res, what, body);
  }

  /**
   * One page of the keys under `prefix` (a whole key prefix), with `delimiter` the common prefixes
   * in place of what lies below them. Keys come URL-encoded (encoding-type=url): no XML escapes to
   * undo, and any byte survives.
   */
  async listPage(prefix: string, options: { delimiter?: string; maxKeys: number; token?: string }): Promise<ListPage> {
    const what = `ListObjectsV2 ${prefix}`;
    const query: Record<string, string> = { 'list-type': '2', prefix, 'max-keys': String(options.maxKeys), 'encoding-type': 'url' };
    if (options.delimiter) query.delimiter = options.delimiter;
    if (options.token) query['continuation-token'] = options.token;
    const res = await this.http.send(what, 'GET', '', query);
    const body = await res.body.text();
    if (res.status !== 200) throw failure(res, what, body);
    let result: ListBucketResult | undefined;
    try {
      result = (parseXML(body) as { ListBucketResult?: ListBucketResult }).ListBucketResult;
    } catch (err) {
      throw new StorageError(`${NAME}: ${what}: unreadable answer: ${(err as Error).message}`, NAME, { cause: err });
    }
    if (result === undefined) throw new StorageError(`${NAME}: ${what}: unreadable answer (no ListBucketResult)`, NAME);
    const decode = result.EncodingType === 'url' ? (s: string) => decodeURIComponent(s.replace(/\+/g, ' ')) : (s: string) => s;
    return {
      prefixes: many(result.CommonPrefixes).map((p) => decode(p.Prefix ?? '')),
      objects: many(result.Contents).map((o) => ({ key: decode(o.Key ?? ''), size: Number(o.Size ?? 0), modTime: o.LastModified ? new Date(o.LastModified) : new Date() })),
      next: result.IsTruncated === 'true' && result.NextContinuationToken ? result.NextContinuationToken : undefined,
    };
  }

  async putObject(path: string, data: Buffer): Promise<void> {
    await this.send(`PutObject ${path}`, () =>
      this.client.send(new PutObjectCommand({ Bucket: this.name, Key: this.key(path), Body: data, ContentLength: data.length, ContentType: 'application/octet-stream', ...this.writeParams })),
    );
  }

  /** removes the object at path, if any (not what lies below it) */
  async deleteObject(path: string): Promise<void> {
    await this.send(`DeleteObject ${path}`, () => this.client.send(new DeleteObjectCommand({ Bucket: this.name, Key: this.key(path) })));
  }
}

/** ListObjectsV2's answer as the XML parser gives it (text everywhere) */
interface ListBucketResult {
  EncodingType?: string;
  IsTruncated?: string;
  NextContinuationToken?: string;
  CommonPrefixes?: { Prefix?: string } | { Prefix?: string }[];
  Contents?: ListEntry | ListEntry[];
}
interface ListEntry {
  Key?: string;
  Size?: string;
  LastModified?: string;
}

function lastModified(res: SignedResponse): Date {
  const value = res.headers['last-modified'];
  return typeof value === 'string' ? new Date(value) : new Date();
}

/** an answer other than success or 404, with the store's error code and message when it sent them */
export function failure(res: SignedResponse, what: string, body: string): StorageError {
  const code = /<Code>([^<]*)<\/Code>/.exec(body)?.[1];
  const message = /<Message>([^<]*)<\/Message>/.exec(body)?.[1];
  return new StorageError(`${NAME}: ${what}: ${res.status}${code ? ` ${code}` : ''}${message ? `: ${message}` : ''}`, NAME);
}
