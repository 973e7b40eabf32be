/**
 * Stores files as objects of an S3 bucket (AWS or an S3-compatible store such as Ceph radosgw),
 * with the key mapping of Distribution's S3 driver: driver path `/a/b` is the key
 * `<rootdirectory>/a/b` without a leading slash, so either registry can serve the other's bucket.
 *
 * Writers: bytes are buffered up to `chunksize` and sent as parts of a multipart upload; a file
 * smaller than one part is sent in one PutObject. Between writers (close(), another request, another
 * instance) the file is always a plain, readable object: close() completes the multipart upload.
 * An appending writer continues it server-side: an object of at least 5 MiB becomes the first
 * part(s) of a new multipart upload by UploadPartCopy; a smaller one is read back into the buffer.
 * So no process memory is needed to resume, any instance can continue, and readers (the upload
 * hash is recomputed from stored bytes on another instance) can always read what was written.
 * See docs/decisions.md ("S3 driver") for why.
 */
import { Agent as HttpAgent } from 'node:http';
import { Agent as HttpsAgent } from 'node:https';
import { Readable } from 'node:stream';
import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CopyObjectCommand,
  CreateMultipartUploadCommand,
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  S3ServiceException,
  UploadPartCommand,
  UploadPartCopyCommand,
  type CompletedPart,
  type S3ClientConfig,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import {
  checkDirPath,
  checkPath,
  childPath,
  InvalidOffsetError,
  PathNotFoundError,
  pathSortKey,
  StorageError,
  StorageUnavailableError,
  UnsupportedMethodError,
  type FileInfo,
  type FileWriter,
  type RedirectRequest,
  type StorageDriver,
  type WalkFn,
  type WalkOptions,
  readEnd,
  chunksOf,
} from './driver.js';

const NAME = 's3';
const MiB = 1024 * 1024;
const GiB = 1024 * MiB;
/** the smallest part S3 accepts, except for the last part of an upload */
export const MIN_PART_SIZE = 5 * MiB;
/** the largest part (and the largest single CopyObject) */
const MAX_PART_SIZE = 5 * GiB;
const LIST_PAGE = 1000;

export type S3Parameters = NonNullable<Config['storage']['s3']>;

export interface S3DriverOptions extends S3Parameters {
  /** how long pre-signed redirect URLs stay valid (default 20 minutes) */
  redirectExpiryMs?: number;
  /** for loglevel other than off */
  logger?: Logger;
  /** attempts per request, retries included (default 5) */
  maxAttempts?: number;
  /** client overrides, for tests */
  clientConfig?: Partial<S3ClientConfig>;
}

/** the endpoint URL: regionendpoint with the scheme chosen by `secure` when it has none */
function endpointURL(p: S3Parameters): string | undefined {
  if (p.regionendpoint === undefined) return undefined;
  if (/^https?:\/\//.test(p.regionendpoint)) return p.regionendpoint;
  return `${p.secure ? 'https' : 'http'}://${p.regionendpoint}`;
}

function sdkLogger(level: S3Parameters['loglevel'], logger: Logger | undefined): S3ClientConfig['logger'] {
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
    // S3-compatible stores (radosgw, ...) refuse the SDK's default streamed checksums (411 MissingContentLength)
    ...(endpoint !== undefined ? { requestChecksumCalculation: 'WHEN_REQUIRED', responseChecksumValidation: 'WHEN_REQUIRED' } : {}),
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
  return new S3Client(config);
}

function httpStatus(err: unknown): number | undefined {
  return (err as { $metadata?: { httpStatusCode?: number } })?.$metadata?.httpStatusCode;
}

function errorName(err: unknown): string {
  return (err as { name?: string; Code?: string })?.Code ?? (err as { name?: string })?.name ?? '';
}

function isNotFound(err: unknown): boolean {
  const name = errorName(err);
  return name === 'NoSuchKey' || name === 'NotFound' || name === 'NoSuchUpload' || httpStatus(err) === 404;
}

/** what the SDK could not do after its retries, as a StorageError the HTTP edge understands */
function toStorageError(err: unknown, what: string): StorageError {
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

interface Entry {
  name: string;
  isDir: boolean;
  size: number;
  modTime: Date;
}

export class S3Driver implements StorageDriver {
  readonly name = NAME;
  readonly client: S3Client;
  readonly bucket: string;
  /** '' or 'a/b/' */
  private readonly prefix: string;
  private readonly writeParams: {
    StorageClass: 'STANDARD' | 'REDUCED_REDUNDANCY';
    ACL: S3Parameters['objectacl'];
    ServerSideEncryption?: 'AES256' | 'aws:kms';
    SSEKMSKeyId?: string;
  };

  constructor(readonly options: S3DriverOptions) {
    this.client = buildS3Client(options);
    this.bucket = options.bucket;
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

  /** fails with a clear message unless the bucket exists and the credentials reach it */
  async ready(): Promise<void> {
    try {
      await this.client.send(new HeadBucketCommand({ Bucket: this.bucket }));
    } catch (err) {
      const status = httpStatus(err);
      const where = this.options.regionendpoint ?? `region ${this.options.region}`;
      if (status === 404) throw new StorageError(`${NAME}: storage.s3.bucket: bucket ${JSON.stringify(this.bucket)} does not exist at ${where}; create it first`, NAME);
      if (status === 403 || status === 401) {
        throw new StorageError(`${NAME}: storage.s3.bucket: access to bucket ${JSON.stringify(this.bucket)} at ${where} was denied (check storage.s3.accesskey/secretkey and the bucket policy)`, NAME);
      }
      throw new StorageError(`${NAME}: storage.s3.bucket: cannot reach bucket ${JSON.stringify(this.bucket)} at ${where}: ${(err as Error).message}`, NAME, { cause: err });
    }
  }

  /** driver path -> object key */
  key(path: string): string {
    return path === '/' ? this.prefix : this.prefix + path.slice(1);
  }

  /** key prefix of everything below a directory */
  private dirPrefix(path: string): string {
    return path === '/' ? this.prefix : `${this.key(path)}/`;
  }

  private async send<T>(what: string, work: () => Promise<T>): Promise<T> {
    try {
      return await work();
    } catch (err) {
      throw toStorageError(err, what);
    }
  }

  private async head(path: string): Promise<{ size: number; modTime: Date } | undefined> {
    try {
      const out = await this.client.send(new HeadObjectCommand({ Bucket: this.bucket, Key: this.key(path) }));
      return { size: out.ContentLength ?? 0, modTime: out.LastModified ?? new Date() };
    } catch (err) {
      if (isNotFound(err)) return undefined;
      throw toStorageError(err, `HeadObject ${path}`);
    }
  }

  async getContent(path: string): Promise<Buffer> {
    checkPath(path, NAME);
    try {
      const out = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.key(path) }));
      return Buffer.from(await out.Body!.transformToByteArray());
    } catch (err) {
      if (isNotFound(err)) throw new PathNotFoundError(path, NAME);
      throw toStorageError(err, `GetObject ${path}`);
    }
  }

  async putContent(path: string, data: Buffer): Promise<void> {
    checkPath(path, NAME);
    await this.putObject(path, data);
  }

  private async putObject(path: string, data: Buffer): Promise<void> {
    await this.send(`PutObject ${path}`, () =>
      this.client.send(new PutObjectCommand({ Bucket: this.bucket, Key: this.key(path), Body: data, ContentLength: data.length, ContentType: 'application/octet-stream', ...this.writeParams })),
    );
  }

  async reader(path: string, offset = 0, length?: number): Promise<Readable> {
    checkPath(path, NAME);
    if (!Number.isSafeInteger(offset) || offset < 0) throw new InvalidOffsetError(path, offset, NAME);
    if (length === 0) return this.emptyRead(path, offset);
    const last = length === undefined ? '' : String(readEnd(offset, length, Number.MAX_SAFE_INTEGER) - 1);
    try {
      const out = await this.client.send(
        // only the bytes asked for leave the store (a ranged blob GET reads just its range)
        new GetObjectCommand({ Bucket: this.bucket, Key: this.key(path), Range: offset > 0 || last ? `bytes=${offset}-${last}` : undefined }),
      );
      return out.Body as Readable;
    } catch (err) {
      if (isNotFound(err)) throw new PathNotFoundError(path, NAME);
      // offset at or past the end: at the end is an empty read, past it an error
      if (httpStatus(err) === 416) return this.emptyRead(path, offset);
      throw toStorageError(err, `GetObject ${path}`);
    }
  }

  /** a read of no bytes at `offset`, which must lie within the object or at its end */
  private async emptyRead(path: string, offset: number): Promise<Readable> {
    const info = await this.head(path);
    if (info === undefined) throw new PathNotFoundError(path, NAME);
    if (offset > info.size) throw new InvalidOffsetError(path, offset, NAME);
    return Readable.from([]);
  }

  async writer(path: string, append: boolean): Promise<FileWriter> {
    checkPath(path, NAME);
    const key = this.key(path);
    // multipart uploads left by a writer that never finished (a crash): the object is what counts
    await this.abortUploads(key, (k) => k === key);
    let base: { size: number } | undefined;
    if (append) {
      base = await this.head(path);
    } else {
      await this.send(`DeleteObject ${path}`, () => this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key })));
    }
    const writer = new S3Writer(this, path, key, base?.size ?? 0);
    if (base !== undefined && base.size > 0 && base.size < MIN_PART_SIZE) await writer.loadSmallBase();
    return writer;
  }

  async stat(path: string): Promise<FileInfo> {
    checkDirPath(path, NAME);
    if (path !== '/') {
      const info = await this.head(path);
      if (info) return { path, size: info.size, modTime: info.modTime, isDir: false };
      const out = await this.send(`ListObjectsV2 ${path}`, () =>
        this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: this.dirPrefix(path), MaxKeys: 1 })),
      );
      if ((out.KeyCount ?? out.Contents?.length ?? 0) === 0) throw new PathNotFoundError(path, NAME);
    }
    return { path, size: 0, modTime: new Date(), isDir: true };
  }

  /** direct children of a directory, sorted by name (plain code-unit order, as list() promises) */
  private async entries(path: string): Promise<Entry[]> {
    const prefix = this.dirPrefix(path);
    const byName = new Map<string, Entry>();
    let token: string | undefined;
    do {
      const out = await this.send(`ListObjectsV2 ${path}`, () =>
        this.client.send(
          new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, Delimiter: '/', MaxKeys: LIST_PAGE, ContinuationToken: token }),
        ),
      );
      for (const p of out.CommonPrefixes ?? []) {
        const name = p.Prefix!.slice(prefix.length).replace(/\/$/, '');
        if (name !== '') byName.set(name, { name, isDir: true, size: 0, modTime: new Date() });
      }
      for (const o of out.Contents ?? []) {
        const name = o.Key!.slice(prefix.length);
        // a directory wins over a file of the same name (cannot happen through berth)
        if (name !== '' && !byName.get(name)?.isDir) byName.set(name, { name, isDir: false, size: o.Size ?? 0, modTime: o.LastModified ?? new Date() });
      }
      token = out.IsTruncated ? out.NextContinuationToken : undefined;
    } while (token);
    return [...byName.values()].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  async list(path: string): Promise<string[]> {
    return (await this.listNames(path)).map((name) => childPath(path, name));
  }

  async listNames(path: string): Promise<string[]> {
    checkDirPath(path, NAME);
    const entries = await this.entries(path);
    if (entries.length === 0 && path !== '/') throw new PathNotFoundError(path, NAME);
    return entries.map((e) => e.name);
  }

  /**
   * Never vouches: a prefix has no modification time or version, and nothing short of listing it
   * again tells that a key was added below it (by another instance, say).
   */
  async childrenVersion(path: string): Promise<string | undefined> {
    checkDirPath(path, NAME);
    return undefined;
  }

  async move(src: string, dst: string): Promise<void> {
    checkPath(src, NAME);
    checkPath(dst, NAME);
    const info = await this.head(src);
    if (info === undefined) throw new PathNotFoundError(src, NAME);
    if (src === dst) return;
    if (info.size <= this.options.multipartcopythresholdsize) {
      await this.send(`CopyObject ${src} -> ${dst}`, () =>
        this.client.send(new CopyObjectCommand({ Bucket: this.bucket, Key: this.key(dst), CopySource: this.copySource(src), ...this.writeParams })),
      );
    } else {
      await this.multipartCopy(src, dst, info.size);
    }
    await this.send(`DeleteObject ${src}`, () => this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.key(src) })));
  }

  /** `bucket/key`, URL-encoded per segment, for CopySource */
  copySource(path: string): string {
    return `${this.bucket}/${this.key(path).split('/').map(encodeURIComponent).join('/')}`;
  }

  /** copies src to dst in parts of multipartcopychunksize, at most multipartcopymaxconcurrency in flight */
  private async multipartCopy(src: string, dst: string, size: number): Promise<void> {
    const dstKey = this.key(dst);
    const uploadId = await this.createUpload(dstKey, dst);
    try {
      const chunk = this.options.multipartcopychunksize;
      const count = Math.ceil(size / chunk);
      const parts: CompletedPart[] = new Array(count);
      let next = 0;
      const worker = async () => {
        while (next < count) {
          const i = next++;
          const start = i * chunk;
          const end = Math.min(size, start + chunk) - 1;
          parts[i] = await this.copyPart(dstKey, uploadId, i + 1, src, start, end);
        }
      };
      await Promise.all(Array.from({ length: Math.min(count, this.options.multipartcopymaxconcurrency) }, worker));
      await this.completeUpload(dstKey, dst, uploadId, parts);
    } catch (err) {
      await this.abortUpload(dstKey, uploadId).catch(() => undefined);
      throw err;
    }
  }

  async createUpload(key: string, path: string): Promise<string> {
    const out = await this.send(`CreateMultipartUpload ${path}`, () =>
      this.client.send(new CreateMultipartUploadCommand({ Bucket: this.bucket, Key: key, ContentType: 'application/octet-stream', ...this.writeParams })),
    );
    return out.UploadId!;
  }

  async uploadPart(key: string, path: string, uploadId: string, partNumber: number, body: Buffer): Promise<CompletedPart> {
    const out = await this.send(`UploadPart ${path} #${partNumber}`, () =>
      this.client.send(new UploadPartCommand({ Bucket: this.bucket, Key: key, UploadId: uploadId, PartNumber: partNumber, Body: body, ContentLength: body.length })),
    );
    return { PartNumber: partNumber, ETag: out.ETag };
  }

  async copyPart(key: string, uploadId: string, partNumber: number, src: string, start: number, end: number): Promise<CompletedPart> {
    const out = await this.send(`UploadPartCopy ${src} -> #${partNumber}`, () =>
      this.client.send(
        new UploadPartCopyCommand({
          Bucket: this.bucket,
          Key: key,
          UploadId: uploadId,
          PartNumber: partNumber,
          CopySource: this.copySource(src),
          CopySourceRange: `bytes=${start}-${end}`,
        }),
      ),
    );
    return { PartNumber: partNumber, ETag: out.CopyPartResult?.ETag };
  }

  /** completes an upload (its answer's ETag is not used: some stores send an empty one) */
  async completeUpload(key: string, path: string, uploadId: string, parts: CompletedPart[]): Promise<void> {
    await this.send(`CompleteMultipartUpload ${path}`, () =>
      this.client.send(new CompleteMultipartUploadCommand({ Bucket: this.bucket, Key: key, UploadId: uploadId, MultipartUpload: { Parts: parts } })),
    );
  }

  async abortUpload(key: string, uploadId: string): Promise<void> {
    try {
      await this.client.send(new AbortMultipartUploadCommand({ Bucket: this.bucket, Key: key, UploadId: uploadId }));
    } catch (err) {
      if (!isNotFound(err)) throw toStorageError(err, `AbortMultipartUpload ${key}`);
    }
  }

  /** aborts the in-progress multipart uploads whose key starts with `prefix` and passes `match` */
  private async abortUploads(prefix: string, match: (key: string) => boolean): Promise<number> {
    let aborted = 0;
    let keyMarker: string | undefined;
    let uploadIdMarker: string | undefined;
    do {
      const out = await this.send(`ListMultipartUploads ${prefix}`, () =>
        this.client.send(
          new ListMultipartUploadsCommand({ Bucket: this.bucket, Prefix: prefix, MaxUploads: LIST_PAGE, KeyMarker: keyMarker, UploadIdMarker: uploadIdMarker }),
        ),
      );
      for (const u of out.Uploads ?? []) {
        if (u.Key !== undefined && u.UploadId !== undefined && match(u.Key)) {
          await this.abortUpload(u.Key, u.UploadId);
          aborted++;
        }
      }
      [keyMarker, uploadIdMarker] = out.IsTruncated ? [out.NextKeyMarker, out.NextUploadIdMarker] : [undefined, undefined];
    } while (keyMarker !== undefined);
    return aborted;
  }

  async delete(path: string): Promise<void> {
    checkPath(path, NAME);
    const key = this.key(path);
    let found = 0;
    if (await this.head(path)) {
      await this.send(`DeleteObject ${path}`, () => this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: key })));
      found++;
    }
    // everything below, 1000 keys per listing page and per DeleteObjects batch
    const prefix = `${key}/`;
    for (;;) {
      const out = await this.send(`ListObjectsV2 ${path}`, () =>
        this.client.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, MaxKeys: LIST_PAGE })),
      );
      const keys = (out.Contents ?? []).map((o) => ({ Key: o.Key! }));
      if (keys.length === 0) break;
      found += keys.length;
      const result = await this.send(`DeleteObjects ${path}`, () =>
        this.client.send(new DeleteObjectsCommand({ Bucket: this.bucket, Delete: { Objects: keys, Quiet: true } })),
      );
      const failed = (result.Errors ?? []).filter((e) => e.Code !== 'NoSuchKey');
      if (failed.length > 0) {
        throw new StorageError(`${NAME}: DeleteObjects ${path}: ${failed.length} keys not deleted, first ${failed[0].Key}: ${failed[0].Code} ${failed[0].Message}`, NAME);
      }
    }
    found += await this.abortUploads(prefix, () => true);
    if (found === 0) throw new PathNotFoundError(path, NAME);
  }

  /** removes the object at path, if any (not what lies below it) */
  async deleteObject(path: string): Promise<void> {
    await this.send(`DeleteObject ${path}`, () => this.client.send(new DeleteObjectCommand({ Bucket: this.bucket, Key: this.key(path) })));
  }

  async redirectURL(req: RedirectRequest, path: string): Promise<string | undefined> {
    checkPath(path, NAME);
    const expiresIn = Math.max(1, Math.round((this.options.redirectExpiryMs ?? 20 * 60_000) / 1000));
    const input = { Bucket: this.bucket, Key: this.key(path) };
    return this.send(`presign ${path}`, () =>
      getSignedUrl(this.client, req.method === 'HEAD' ? new HeadObjectCommand(input) : new GetObjectCommand(input), { expiresIn }),
    );
  }

  async walk(path: string, fn: WalkFn, options: WalkOptions = {}): Promise<void> {
    checkDirPath(path, NAME);
    const entries = await this.entries(path);
    if (entries.length === 0 && path !== '/') throw new PathNotFoundError(path, NAME);
    await this.walkEntries(path, entries, fn, options.startAfter);
  }

  /**
   * One listing (with Delimiter '/') per directory: S3 lists keys in plain byte order, where
   * 'a-b/...' comes before 'a/...'; directory by directory the order is pathSortKey's.
   * Returns false when fn asked to stop.
   */
  private async walkEntries(path: string, entries: Entry[], fn: WalkFn, startAfter?: string): Promise<boolean> {
    for (const entry of entries) {
      const child = childPath(path, entry.name);
      if (startAfter !== undefined && pathSortKey(child) <= pathSortKey(startAfter)) {
        const holdsHint = child === startAfter || startAfter.startsWith(`${child}/`);
        if (holdsHint && entry.isDir && !(await this.walkEntries(child, await this.entries(child), fn, startAfter))) return false;
        continue;
      }
      const control = await fn({ path: child, size: entry.size, modTime: entry.modTime, isDir: entry.isDir });
      if (control === 'stop') return false;
      if (entry.isDir && control !== 'skip' && !(await this.walkEntries(child, await this.entries(child), fn, startAfter))) return false;
    }
    return true;
  }

  async close(): Promise<void> {
    this.client.destroy();
  }
}

/**
 * One part is uploaded while the next one fills: write() hands a full part to the store and
 * returns, and waits only when the part before is still in flight. Memory: at most two parts
 * (`chunksize` each) plus one incoming chunk.
 */
class S3Writer implements FileWriter {
  private finished = false;
  /** the multipart upload, created (and the base copied into it) on first need */
  private upload: Promise<string> | undefined;
  private readonly parts: CompletedPart[] = [];
  private buffer: Buffer[] = [];
  private buffered = 0;
  /** bytes of the existing object that become the first parts, copied server-side (base of at least 5 MiB) */
  private readonly baseSize: number;
  private readonly baseParts: number;
  private nextPart: number;
  /** the part upload in flight, if any; its failure is kept in `failure` */
  private inflight: Promise<void> | undefined;
  private failure: unknown;
  /** something changed since open: close() has to write */
  private dirty = false;
  private total: number;

  constructor(
    private readonly driver: S3Driver,
    private readonly path: string,
    private readonly key: string,
    baseSize: number,
  ) {
    this.total = baseSize;
    this.baseSize = baseSize >= MIN_PART_SIZE ? baseSize : 0;
    this.baseParts = Math.ceil(this.baseSize / MAX_PART_SIZE);
    this.nextPart = this.baseParts + 1;
  }

  get size(): number {
    return this.total;
  }

  /** a base object below the minimum part size is read back and sent again with the new bytes */
  async loadSmallBase(): Promise<void> {
    const data = await this.driver.getContent(this.path);
    this.buffer = [data];
    this.buffered = data.length;
    this.total = data.length;
  }

  private get chunkSize(): number {
    return this.driver.options.chunksize;
  }

  async write(data: Buffer | readonly Buffer[]): Promise<void> {
    this.check();
    for (const chunk of chunksOf(data)) {
      if (chunk.length === 0) continue;
      this.buffer.push(Buffer.from(chunk)); // a copy: the caller may reuse its buffer once this resolves
      this.buffered += chunk.length;
      this.total += chunk.length;
      this.dirty = true;
    }
    while (this.buffered >= this.chunkSize) {
      const part = this.takePart(this.chunkSize);
      await this.settle(); // at most one part in flight
      this.inflight = this.sendPart(part).catch((err: unknown) => {
        this.failure ??= err;
      });
    }
    this.throwFailure();
  }

  /** waits for the part in flight */
  private async settle(): Promise<void> {
    if (this.inflight) await this.inflight;
    this.inflight = undefined;
    this.throwFailure();
  }

  private throwFailure(): void {
    if (this.failure !== undefined) throw this.failure;
  }

  /** starts the multipart upload; the existing object (>= 5 MiB) becomes its first parts, copied server-side */
  private ensureUpload(): Promise<string> {
    this.upload ??= (async () => {
      const uploadId = await this.driver.createUpload(this.key, this.path);
      const partSize = Math.ceil(this.baseSize / Math.max(1, this.baseParts));
      for (let i = 0; i < this.baseParts; i++) {
        const start = i * partSize;
        const end = Math.min(this.baseSize, start + partSize) - 1;
        this.parts[i] = await this.driver.copyPart(this.key, uploadId, i + 1, this.path, start, end);
      }
      return uploadId;
    })();
    return this.upload;
  }

  /** the first `bytes` buffered bytes as the next part (numbered now, sent later) */
  private takePart(bytes: number): { partNumber: number; body: Buffer } {
    const all = this.buffer.length === 1 ? this.buffer[0] : Buffer.concat(this.buffer, this.buffered);
    const body = all.subarray(0, bytes);
    const rest = all.subarray(bytes);
    this.buffer = rest.length > 0 ? [Buffer.from(rest)] : [];
    this.buffered = rest.length;
    return { partNumber: this.nextPart++, body };
  }

  private async sendPart({ partNumber, body }: { partNumber: number; body: Buffer }): Promise<void> {
    const uploadId = await this.ensureUpload();
    this.parts[partNumber - 1] = await this.driver.uploadPart(this.key, this.path, uploadId, partNumber, body);
  }

  /** makes everything written so far the object at the path */
  private async persist(): Promise<void> {
    const multipart = this.upload !== undefined || this.inflight !== undefined || (this.dirty && this.baseSize > 0);
    if (!multipart) {
      if (!this.dirty && this.total > 0) return; // an untouched base: nothing to do
      const body = this.buffer.length === 1 ? this.buffer[0] : Buffer.concat(this.buffer, this.buffered);
      await this.driver.putContent(this.path, body); // small file (or empty): one PutObject
      return;
    }
    try {
      await this.settle();
      // the last part may be small; a large base with a few new bytes gets its copy parts here
      if (this.buffered > 0) await this.sendPart(this.takePart(this.buffered));
      const uploadId = await this.ensureUpload();
      await this.driver.completeUpload(this.key, this.path, uploadId, this.parts);
    } catch (err) {
      await this.abort();
      throw err;
    }
  }

  /** aborts the multipart upload, if one was started */
  private async abort(): Promise<void> {
    await this.inflight;
    const uploadId = await this.upload?.catch(() => undefined);
    if (uploadId !== undefined) await this.driver.abortUpload(this.key, uploadId).catch(() => undefined);
  }

  async close(): Promise<void> {
    this.check();
    this.finished = true;
    try {
      await this.persist();
    } finally {
      this.buffer = [];
      this.buffered = 0;
    }
  }

  async commit(): Promise<void> {
    return this.close();
  }

  async cancel(): Promise<void> {
    this.check();
    this.finished = true;
    this.buffer = [];
    this.buffered = 0;
    await this.inflight;
    const uploadId = await this.upload?.catch(() => undefined);
    if (uploadId !== undefined) await this.driver.abortUpload(this.key, uploadId);
    await this.driver.deleteObject(this.path);
  }

  private check(): void {
    if (this.finished) throw new UnsupportedMethodError(`${NAME}: writer for ${this.path} already closed`, NAME);
  }
}
