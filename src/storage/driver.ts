/**
 * The storage-driver contract: everything berth persists goes through one of these.
 * Modelled on CNCF Distribution's StorageDriver so that object stores fit without contortions.
 * A driver knows nothing of manifests or digests: it stores bytes at paths.
 *
 * Paths are absolute, '/'-separated, and match PATH_PATTERN; the driver maps them below its own root.
 * Drivers extend BaseDriver (base.ts), which checks paths and implements list and walk once;
 * wrappers extend ForwardingDriver (forwarding.ts).
 */
import type { Readable } from 'node:stream';

export const PATH_PATTERN = /^(\/[A-Za-z0-9._-]+)+$/;

export interface FileInfo {
  path: string;
  /** bytes; 0 for directories */
  size: number;
  modTime: Date;
  isDir: boolean;
}

/** What a driver needs to know to hand out a URL that serves `path` directly (pre-signed, CDN...). */
export interface RedirectRequest {
  method: 'GET' | 'HEAD';
  /** client address, for middleware that chooses by network (e.g. CDN IP filters) */
  clientIP?: string;
}

/** Returned by a WalkFn: 'skip' does not descend into the directory just visited, 'stop' ends the walk. */
export type WalkControl = void | 'skip' | 'stop';
export type WalkFn = (info: FileInfo) => WalkControl | Promise<WalkControl>;

export interface WalkOptions {
  /**
   * Visit only entries whose path sorts lexically after this one (a start hint for paging,
   * e.g. the catalog's `last`). Directories that are a prefix of it are still descended into.
   */
  startAfter?: string;
}

/**
 * A streaming writer for one path. Bytes written are appended; the file becomes visible at its
 * path no later than commit(). A writer opened with append=true continues an earlier writer's
 * file (after close(), a restart, or from another instance).
 */
export interface FileWriter {
  /** bytes in the file so far, including those of earlier writers when appending */
  readonly size: number;
  /**
   * appends a chunk, or several in order; resolves when the driver has accepted them (apply
   * backpressure by awaiting; one write at a time). The caller must not change the bytes until then.
   */
  write(data: Buffer | readonly Buffer[]): Promise<void>;
  /** persists what was written and releases the writer; the file can be appended to later */
  close(): Promise<void>;
  /** finishes the file: after it, it is complete and no longer writable */
  commit(): Promise<void>;
  /** discards the file and everything written to it */
  cancel(): Promise<void>;
}

export interface PutOptions {
  secret?: boolean;
}

export interface StorageDriver {
  readonly name: string;
  /** whole content of a small file (links, manifests, hash state) */
  getContent(path: string): Promise<Buffer>;
  /**
   * atomic: concurrent readers see the old content or the new, never a mix or a prefix.
   * `options.secret`: readable by the registry's own user only (filesystem: mode 0600 from creation)
   */
  putContent(path: string, data: Buffer, options?: PutOptions): Promise<void>;
  /**
   * stream of the file's bytes from `offset`, at most `length` of them (to the end when
   * undefined); offset past the end -> InvalidOffsetError
   */
  reader(path: string, offset?: number, length?: number): Promise<Readable>;
  writer(path: string, append: boolean): Promise<FileWriter>;
  stat(path: string): Promise<FileInfo>;
  /** full paths of the direct children, sorted lexically */
  list(path: string): Promise<string[]>;
  /**
   * names (not paths) of the direct children, sorted by code unit: what list gives, without
   * building a path per child (the tag list reads directories of 10,000s of names)
   */
  listNames(path: string): Promise<string[]>;
  /**
   * A token for the set of names in directory `path`, for callers that cache a listing. If a call
   * returns token T and a later call returns T again, no child was added to or removed from the
   * directory between the start of the first call and the end of the second, and no file directly
   * in it was written by putContent or move, so a listing (or a small file) read after the first
   * call is still current. A token may change when nothing of that happened (a file further below
   * rewritten, say); it never stays the same when it did (appends through a writer do not count). undefined: the driver cannot
   * vouch for the directory now (the filesystem, when it changed too recently for timestamps to
   * tell a later change apart), or never (drivers with nothing to go by, which answer undefined
   * without looking at the directory). A missing directory: PathNotFoundError (for drivers that vouch).
   */
  childrenVersion(path: string): Promise<string | undefined>;
  /** moves a file, replacing any file at dst */
  move(src: string, dst: string): Promise<void>;
  /** removes a file or a directory tree */
  delete(path: string): Promise<void>;
  /** a URL that serves the file without the registry in between, or undefined when the driver has none */
  redirectURL(req: RedirectRequest, path: string): Promise<string | undefined>;
  /** depth-first, lexical order, every file and directory below `path` (not `path` itself) */
  walk(path: string, fn: WalkFn, options?: WalkOptions): Promise<void>;
  /** checks the backend at start-up (e.g. that the bucket exists) and fails with a clear message */
  ready?(): Promise<void>;
  /** releases resources (timers, sockets) */
  close?(): Promise<void>;
  /**
   * small files (links, berth.json) read whole with their modification time, many at once, in
   * order; undefined for a missing one. Optional: offered by a driver for which a batch costs far
   * less than a getContent and a stat each (the filesystem: synchronous calls on worker threads,
   * small-files.ts; S3: a GET each, many in flight, no HEAD); the index rebuild's reading uses it when there
   */
  readSmallFiles?(paths: readonly string[]): Promise<(SmallFile | undefined)[]>;
  /**
   * many directories' facts at once, in order: what childrenVersion, listNames and a stat of a
   * file below each listed name would tell, without a call each. Optional, like readSmallFiles
   * (the filesystem: synchronous calls on its worker threads); the index reconciler's
   * fingerprints use it when there. A path that is no directory is `{exists: false}`.
   */
  inspectDirectories?(queries: readonly DirectoryQuery[]): Promise<DirectoryFacts[]>;
  /**
   * every complete file below a directory, at any depth, with its size and time, in one pass
   * (missing directory: empty). Optional: offered where it costs far less than a walk (S3: one
   * listing without a delimiter, 1,000 keys a request); online collection reads its trash and
   * blobs/ with it when there
   */
  listFiles?(path: string): Promise<FileInfo[]>;
  /** deletes these files (not directories) in as few calls as the store allows; missing ones are no error. Optional, as listFiles */
  deleteFiles?(paths: readonly string[]): Promise<void>;
  /**
   * true when move gives the destination the time of the move as its modification time (S3: a
   * copy is a new object); absent or false when it may keep the source's (a rename). Online
   * collection then takes the time a blob went to its trash from the moved data itself
   */
  readonly moveSetsModTime?: boolean;
}

/** what inspectDirectories is asked of one directory */
export interface DirectoryQuery {
  path: string;
  /** its childrenVersion token */
  version?: boolean;
  /** its children's names, as listNames gives them */
  names?: boolean;
  /** with names: the size and time of the file at `<path>/<name>/<below>` for each name (a relative file path) */
  below?: string;
}

/** what inspectDirectories tells of one directory */
export interface DirectoryFacts {
  /** false: no directory at the path (nothing else is told) */
  exists: boolean;
  /** asked for and vouched for: childrenVersion's token (undefined: it cannot vouch now) */
  version?: string;
  names?: string[];
  /** per name, in order: the file below it (a directory there: size 0), undefined when missing */
  below?: ({ size: number; modTimeMs: number } | undefined)[];
}

/** a file read by readSmallFiles */
export interface SmallFile {
  content: Buffer;
  /** modification time, ms since the epoch */
  modTimeMs: number;
}

/**
 * The order of walk and startAfter: path by path component, so '/a/b' sorts before '/a-b'
 * (plain string order would put '-' and '.' before '/'). Distribution's catalog orders the same way.
 */
export function pathSortKey(path: string): string {
  return path.replaceAll('/', '\0');
}

/** the path of `name` inside directory `dir` */
export function childPath(dir: string, name: string): string {
  return dir === '/' ? `/${name}` : `${dir}/${name}`;
}

/** the result of `work`, or undefined when the path it touches does not exist (other errors pass) */
export async function unlessMissing<T>(work: Promise<T>): Promise<T | undefined> {
  try {
    return await work;
  } catch (err) {
    if (err instanceof PathNotFoundError) return undefined;
    throw err;
  }
}

export class StorageError extends Error {
  constructor(message: string, readonly driver: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** the store has no room left (a full disk or quota): a write failed and was undone where it could be */
export class StorageFullError extends StorageError {}

/** errno codes of a full filesystem or an exhausted quota */
const FULL_CODES = new Set(['ENOSPC', 'EDQUOT']);

/** true for a StorageFullError, or an error (or its cause) a full filesystem raised */
export function isStorageFull(err: unknown): boolean {
  for (let e: unknown = err; e instanceof Error; e = e.cause) {
    if (e instanceof StorageFullError || FULL_CODES.has((e as NodeJS.ErrnoException).code ?? '')) return true;
  }
  return false;
}

export class PathNotFoundError extends StorageError {
  constructor(readonly path: string, driver: string) {
    super(`${driver}: path not found: ${path}`, driver);
  }
}

export class InvalidPathError extends StorageError {
  constructor(readonly path: string, driver: string) {
    super(`${driver}: invalid path: ${JSON.stringify(path)} (must match ${PATH_PATTERN})`, driver);
  }
}

/** what FileWriter.write was given, as a list of chunks */
export function chunksOf(data: Buffer | readonly Buffer[]): readonly Buffer[] {
  return Buffer.isBuffer(data) ? [data] : (data as readonly Buffer[]);
}

/** where a read of `length` bytes (to the end when undefined) from `offset` stops in a file of `size` bytes */
export function readEnd(offset: number, length: number | undefined, size: number): number {
  if (length === undefined) return size;
  if (!Number.isSafeInteger(length) || length < 0) throw new RangeError(`read length ${length} is not a byte count`);
  return Math.min(size, offset + length);
}

export class InvalidOffsetError extends StorageError {
  constructor(readonly path: string, readonly offset: number, driver: string) {
    super(`${driver}: invalid offset ${offset} for ${path}`, driver);
  }
}

/**
 * The storage backend is unreachable or keeps failing (network errors, timeouts, 5xx, throttling
 * that outlasted the retries): temporary, answered as 503 UNAVAILABLE.
 */
export class StorageUnavailableError extends StorageError {}

/**
 * A write the store cannot take, for a reason the client can act on: the file would pass one of
 * the store's limits (S3's 10,000 parts of a multipart upload). Answered 400 BLOB_UPLOAD_INVALID
 * with the message.
 */
export class WriteRefusedError extends StorageError {}

/**
 * Another writer of the same file (a concurrent request on another instance) changed it since this
 * writer opened it, and won: nothing this writer wrote is part of the file. The upload answers 416
 * with the size the file has now, from which the client resumes.
 */
export class WriteConflictError extends StorageError {}

/** The driver cannot do what was asked (e.g. a writer already committed). */
export class UnsupportedMethodError extends StorageError {}

/**
 * An option of a driver or middleware that cannot be used (a key file that does not read, say),
 * found at start-up. `option` is its name among the driver's or middleware's options: the
 * composition root reports the problem under the option's whole key path.
 */
export class StorageOptionError extends StorageError {
  constructor(readonly option: string, readonly problem: string, driver: string) {
    super(`${driver}: ${option}: ${problem}`, driver);
  }
}

/** a valid path; '.' and '..' segments match PATH_PATTERN's characters but are refused too */
export function checkPath(path: string, driver: string): void {
  if (!PATH_PATTERN.test(path) || path.split('/').some((s) => s === '.' || s === '..')) throw new InvalidPathError(path, driver);
}

/** Like checkPath, but also accepts the root '/' (for list, walk and stat of directories). */
export function checkDirPath(path: string, driver: string): void {
  if (path !== '/') checkPath(path, driver);
}
