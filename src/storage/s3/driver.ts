/**
 * Stores files as objects of an S3 bucket (AWS or an S3-compatible store such as Ceph radosgw),
 * with the key mapping of Distribution's S3 driver: driver path `/a/b` is the key
 * `<rootdirectory>/a/b` without a leading slash, so either registry can serve the other's bucket.
 *
 * The client (construction, retries, error mapping) is s3/client.ts; writers and multipart copies
 * are s3/multipart.ts. See docs/decisions.md ("S3 driver") for the choices.
 */
import { Readable } from 'node:stream';
import {
  CopyObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadBucketCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  type S3Client,
} from '@aws-sdk/client-s3';
import { getSignedUrl } from '@aws-sdk/s3-request-presigner';
import { BaseDriver, type WalkEntry } from '../base.js';
import {
  checkPath,
  childPath,
  InvalidOffsetError,
  PathNotFoundError,
  StorageError,
  type FileInfo,
  type FileWriter,
  type RedirectRequest,
  readEnd,
  type SmallFile,
} from '../driver.js';
import { Bucket } from './bucket.js';
import { buildS3Client, httpStatus, NAME, type S3DriverOptions } from './client.js';
import { LIST_PAGE, MAX_PARTS, Multipart } from './multipart.js';
import { isPathName, pendingPathName, PendingStore } from './pending.js';
import { SignedHttp } from './signed-http.js';
import { openWriter, type WriterContext } from './writer.js';

export type { S3DriverOptions, S3Parameters } from './client.js';

/** GETs in flight per readSmallFiles call (the rebuild makes two calls per repository, several repositories at once) */
const SMALL_READS = 32;

/** a child in a directory listing */
interface Entry {
  name: string;
  isDir: boolean;
  size: number;
  modTime: Date;
}

export class S3Driver extends BaseDriver {
  readonly name = NAME;
  /** a move is a CopyObject: the copy is a new object, with a new Last-Modified */
  readonly moveSetsModTime = true;
  readonly client: S3Client;
  private readonly bucket: Bucket;
  private readonly multipart: Multipart;
  private readonly pending: PendingStore;
  private readonly writers: WriterContext;
  private readonly http: SignedHttp;

  constructor(readonly options: S3DriverOptions) {
    super();
    this.client = buildS3Client(options);
    this.http = new SignedHttp(this.client, { bucket: options.bucket, skipverify: options.skipverify, maxAttempts: options.maxAttempts ?? 5, logger: options.logger });
    this.bucket = new Bucket(this.client, this.http, options);
    this.multipart = new Multipart(this.bucket);
    this.pending = new PendingStore(this.bucket);
    this.writers = { bucket: this.bucket, multipart: this.multipart, pending: this.pending, chunkSize: options.chunksize, maxParts: options.maxParts ?? MAX_PARTS };
  }

  /** fails with a clear message unless the bucket exists and the credentials reach it */
  async ready(): Promise<void> {
    const bucket = this.options.bucket;
    try {
      await this.client.send(new HeadBucketCommand({ Bucket: bucket }));
    } catch (err) {
      const status = httpStatus(err);
      const where = this.options.regionendpoint ?? `region ${this.options.region}`;
      if (status === 404) throw new StorageError(`${NAME}: storage.s3.bucket: bucket ${JSON.stringify(bucket)} does not exist at ${where}; create it first`, NAME);
      if (status === 403 || status === 401) {
        throw new StorageError(`${NAME}: storage.s3.bucket: access to bucket ${JSON.stringify(bucket)} at ${where} was denied (check storage.s3.accesskey/secretkey and the bucket policy)`, NAME);
      }
      throw new StorageError(`${NAME}: storage.s3.bucket: cannot reach bucket ${JSON.stringify(bucket)} at ${where}: ${(err as Error).message}`, NAME, { cause: err });
    }
  }

  /** driver path -> object key */
  key(path: string): string {
    return this.bucket.key(path);
  }

  protected _getContent(path: string): Promise<Buffer> {
    return this.bucket.getObject(path);
  }

  /**
   * the index rebuild's batch read: a GET each, SMALL_READS in flight, the time from each answer's
   * Last-Modified (a getContent and a stat would be a GET and a HEAD)
   */
  async readSmallFiles(paths: readonly string[]): Promise<(SmallFile | undefined)[]> {
    for (const path of paths) checkPath(path, this.name);
    const files: (SmallFile | undefined)[] = new Array(paths.length);
    let next = 0;
    const reader = async () => {
      while (next < paths.length) {
        const i = next++;
        files[i] = await this.bucket.getTimed(paths[i]);
      }
    };
    await Promise.all(Array.from({ length: Math.min(SMALL_READS, paths.length) }, reader));
    return files;
  }

  /**
   * Every complete file below a directory, at any depth, with its size and time: one listing
   * without a delimiter (a page per 1,000 keys), where a walk lists directory by directory. Files
   * being written (pending states) and keys no driver path names are left out; a missing directory
   * is an empty list. Online collection reads its trash and blobs/ with it.
   */
  async listFiles(path: string): Promise<FileInfo[]> {
    checkPath(path, this.name);
    const prefix = this.bucket.dirPrefix(path);
    const files: FileInfo[] = [];
    let token: string | undefined;
    do {
      const page = await this.bucket.listPage(prefix, { maxKeys: LIST_PAGE, token });
      for (const o of page.objects) {
        const names = o.key.slice(prefix.length).split('/');
        if (names.every(isPathName)) files.push({ path: childPath(path, names.join('/')), size: o.size, modTime: o.modTime, isDir: false });
      }
      token = page.next;
    } while (token);
    return files;
  }

  /** deletes these files (not directories), 1,000 per DeleteObjects; a missing one is no error */
  async deleteFiles(paths: readonly string[]): Promise<void> {
    for (const path of paths) checkPath(path, this.name);
    for (let i = 0; i < paths.length; i += LIST_PAGE) await this.deleteKeys(paths.slice(i, i + LIST_PAGE).map((path) => this.key(path)), 'files');
  }

  protected _putContent(path: string, data: Buffer): Promise<void> {
    return this.bucket.putObject(path, data);
  }

  protected async _reader(path: string, offset: number, length: number | undefined): Promise<Readable> {
    if (length === 0) return this.emptyRead(path, offset);
    const last = length === undefined ? '' : String(readEnd(offset, length, Number.MAX_SAFE_INTEGER) - 1);
    // only the bytes asked for leave the store (a ranged blob GET reads just its range)
    const range = offset > 0 || last ? `bytes=${offset}-${last}` : undefined;
    // over berth's own connections into reused buffers (s3/body-reads.ts; docs/decisions.md, "S3 streamed reads")
    const answer = await this.http.stream(`GetObject ${path}`, this.key(path), range);
    const { status } = answer;
    if (status === (range ? 206 : 200)) return answer.body;
    await answer.discard();
    if (status === 404) throw new PathNotFoundError(path, NAME);
    // offset at or past the end: at the end is an empty read, past it an error
    if (status === 416) return this.emptyRead(path, offset);
    throw new StorageError(`${NAME}: GetObject ${path}${range ? ` (${range})` : ''}: unexpected status ${status}`, NAME);
  }

  /** a read of no bytes at `offset`, which must lie within the object or at its end */
  private async emptyRead(path: string, offset: number): Promise<Readable> {
    const info = await this.bucket.head(path);
    if (info === undefined) throw new PathNotFoundError(path, NAME);
    if (offset > info.size) throw new InvalidOffsetError(path, offset, NAME);
    return Readable.from([]);
  }

  protected _writer(path: string, append: boolean): Promise<FileWriter> {
    return openWriter(this.writers, path, append);
  }

  protected async _stat(path: string): Promise<FileInfo> {
    if (path !== '/') {
      const info = await this.bucket.head(path);
      if (info) return { path, size: info.size, modTime: info.modTime, isDir: false };
      // a file being written (closed, not committed): its size is in the pending state
      const pending = await this.pending.head(path);
      if (pending !== undefined) return { path, size: pending.size, modTime: new Date(), isDir: false };
      const page = await this.bucket.listPage(this.bucket.dirPrefix(path), { maxKeys: 1 });
      if (page.objects.length === 0) throw new PathNotFoundError(path, NAME);
    }
    return { path, size: 0, modTime: new Date(), isDir: true };
  }

  protected async _listNames(path: string): Promise<string[]> {
    return (await this.entries(path)).map((e) => e.name);
  }

  /**
   * Walk takes the sizes and types of the listing as they are instead of a HeadObject per file
   * (the base's default). It lists directory by directory rather than in one listing without a
   * delimiter: S3 lists keys in plain byte order ('a-b/...' before 'a/...'), a directory walk
   * sorts into pathSortKey order on the way, and 'skip' spares the listing of a whole subtree
   * (the catalog skips every repository's).
   */
  protected override async _walkEntries(path: string): Promise<WalkEntry[]> {
    return (await this.entries(path)).map(({ name, ...rest }) => ({ name, info: { path: childPath(path, name), ...rest } }));
  }

  /**
   * The direct children of a directory, from one delimited listing (paged), sorted by name in plain
   * code-unit order; a missing directory (no key below it) is PathNotFoundError.
   */
  private async entries(path: string): Promise<Entry[]> {
    const prefix = this.bucket.dirPrefix(path);
    const byName = new Map<string, Entry & { pending?: boolean }>();
    let token: string | undefined;
    do {
      const page = await this.bucket.listPage(prefix, { delimiter: '/', maxKeys: LIST_PAGE, token });
      for (const p of page.prefixes) {
        const name = p.slice(prefix.length).replace(/\/$/, '');
        if (isPathName(name)) byName.set(name, { name, isDir: true, size: 0, modTime: new Date() });
      }
      for (const o of page.objects) {
        const key = o.key.slice(prefix.length);
        // an unfinished file is its pending state; keys no driver path names are left out
        const name = pendingPathName(key) ?? key;
        if (!isPathName(name)) continue;
        // a directory wins over a file of the same name (cannot happen through berth), a complete
        // object over a pending state (see s3/writer.ts)
        const seen = byName.get(name);
        if (seen?.isDir || (seen && name !== key)) continue;
        byName.set(name, { name, isDir: false, size: o.size, modTime: o.modTime, pending: name !== key });
      }
      token = page.next;
    } while (token);
    if (byName.size === 0 && path !== '/') throw new PathNotFoundError(path, NAME);
    // the size of an unfinished file is in its state's metadata, not the listing
    for (const entry of byName.values()) {
      if (entry.pending) entry.size = (await this.pending.head(childPath(path, entry.name)))?.size ?? entry.size;
    }
    return [...byName.values()].map(({ pending, ...entry }) => entry).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /**
   * Never vouches: a prefix has no modification time or version, and nothing short of listing it
   * again tells that a key was added below it (by another instance, say).
   */
  protected async _childrenVersion(): Promise<string | undefined> {
    return undefined;
  }

  protected async _move(src: string, dst: string): Promise<void> {
    const info = await this.bucket.head(src);
    if (info === undefined) throw new PathNotFoundError(src, NAME);
    if (src === dst) return;
    try {
      if (info.size <= this.options.multipartcopythresholdsize) {
        await this.bucket.send(`CopyObject ${src} -> ${dst}`, () =>
          this.client.send(new CopyObjectCommand({ Bucket: this.bucket.name, Key: this.key(dst), CopySource: this.bucket.copySource(src), ...this.bucket.writeParams })),
        );
      } else {
        await this.multipart.copy(src, dst, info.size, this.options.multipartcopychunksize, this.options.multipartcopymaxconcurrency);
      }
    } catch (err) {
      // the source went between the HEAD and the copy (another instance moved or deleted it)
      if (httpStatus((err as { cause?: unknown }).cause ?? err) === 404 || httpStatus(err) === 404) throw new PathNotFoundError(src, NAME);
      throw err;
    }
    await this.bucket.deleteObject(src);
  }

  protected async _delete(path: string): Promise<void> {
    const key = this.key(path);
    let found = 0;
    if (await this.bucket.head(path)) {
      await this.bucket.deleteObject(path);
      found++;
    }
    // a file being written: its open upload and pending state
    const pending = await this.pending.head(path);
    if (pending !== undefined) {
      if (pending.uploadId !== undefined) await this.multipart.abort(key, pending.uploadId);
      await this.pending.delete(path);
      found++;
    }
    // everything below, 1000 keys per listing page and per DeleteObjects batch
    const prefix = `${key}/`;
    for (;;) {
      const out = await this.bucket.send(`ListObjectsV2 ${path}`, () =>
        this.client.send(new ListObjectsV2Command({ Bucket: this.bucket.name, Prefix: prefix, MaxKeys: LIST_PAGE })),
      );
      const keys = (out.Contents ?? []).map((o) => ({ Key: o.Key! }));
      if (keys.length === 0) break;
      found += keys.length;
      await this.deleteKeys(keys.map((k) => k.Key), path);
    }
    found += await this.multipart.abortAll(prefix, () => true);
    if (found === 0) throw new PathNotFoundError(path, NAME);
  }

  /** one DeleteObjects of at most 1,000 keys; `what` names them in an error */
  private async deleteKeys(keys: string[], what: string): Promise<void> {
    const result = await this.bucket.send(`DeleteObjects ${what}`, () =>
      this.client.send(new DeleteObjectsCommand({ Bucket: this.bucket.name, Delete: { Objects: keys.map((Key) => ({ Key })), Quiet: true } })),
    );
    const failed = (result.Errors ?? []).filter((e) => e.Code !== 'NoSuchKey');
    if (failed.length > 0) {
      throw new StorageError(`${NAME}: DeleteObjects ${what}: ${failed.length} keys not deleted, first ${failed[0].Key}: ${failed[0].Code} ${failed[0].Message}`, NAME);
    }
  }

  protected override _redirectURL(req: RedirectRequest, path: string): Promise<string | undefined> {
    const expiresIn = Math.max(1, Math.round((this.options.redirectExpiryMs ?? 20 * 60_000) / 1000));
    const input = { Bucket: this.bucket.name, Key: this.key(path) };
    return this.bucket.send(`presign ${path}`, () =>
      getSignedUrl(this.client, req.method === 'HEAD' ? new HeadObjectCommand(input) : new GetObjectCommand(input), { expiresIn }),
    );
  }

  async close(): Promise<void> {
    this.client.destroy();
    await this.http.close();
  }
}
