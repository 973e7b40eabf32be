/**
 * `Bucket`: one bucket below the driver's root directory, driver paths as keys, and the object
 * operations on them that the driver, the multipart writer and the pending state share. Reads go
 * through the signed HTTP client (signed-http.ts), writes through the SDK client (client.ts).
 */
import type { Readable } from 'node:stream';
import { parseXML } from '@aws-sdk/xml-builder';
import { DeleteObjectCommand, PutObjectCommand, type ObjectCannedACL, type S3Client } from '@aws-sdk/client-s3';
import { PathNotFoundError, StorageError } from '../driver.js';
import { NAME, toStorageError, type S3Parameters } from './client.js';

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

  /** the object's content and time in one GET (its Last-Modified: no HEAD), undefined when there is none */
  async getTimed(path: string): Promise<{ content: Buffer; modTimeMs: number } | undefined> {
    const what = `GetObject ${path}`;
    const res = await this.http.send(what, 'GET', this.key(path));
    if (res.status === 200) return { content: Buffer.from(await res.body.arrayBuffer()), modTimeMs: lastModified(res).getTime() };
    const body = await res.body.text();
    if (res.status === 404) return undefined;
    throw failure(res, what, body);
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
