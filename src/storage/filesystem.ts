/**
 * Stores files below a local directory. Driver path `/a/b` is `<rootdirectory>/a/b`, the same
 * mapping as Distribution's filesystem driver, so either registry can serve the other's directory.
 */
import { randomBytes } from 'node:crypto';
import { mkdirSync, readdir as readdirWithCallback, readFile as readFileWithCallback, stat as statWithCallback, type BigIntStats, type Stats } from 'node:fs';
import { mkdir, open, rename, rm, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import type { Readable } from 'node:stream';
import { BaseDriver } from './base.js';
import {
  InvalidOffsetError,
  isStorageFull,
  PathNotFoundError,
  StorageFullError,
  StorageError,
  UnsupportedMethodError,
  type FileInfo,
  type FileWriter,
  type PutOptions,
  type SmallFile,
  type DirectoryFacts,
  type DirectoryQuery,
  checkDirPath,
  checkPath,
  readEnd,
  chunksOf,
} from './driver.js';
import { BufferPool } from './buffer-pool.js';
import { FileReadStream } from './file-read-stream.js';
import { SmallFileReader } from './small-files.js';

const NAME = 'filesystem';

/** bytes per read of a blob stream: 64 KiB would cost a threadpool round trip and a socket write per 64 KiB */
const READ_CHUNK = 1024 * 1024;
/**
 * READ_CHUNK buffers that responses keeping up with the disk borrow (file-read-stream.ts): eight
 * fast pulls at once read 1 MiB at a time; more read 16 KiB at a time (more CPU per byte).
 * Clients that stop reading can pin all 16 MiB; the next ones then read 16 KiB at a time.
 */
const LARGE_READS = new BufferPool(READ_CHUNK, 16);

/** putContent's temp files: `.<name>.<16 hex>.tmp`, hidden from list and walk. */
const TEMP_FILE = /^\..+\.[0-9a-f]{16}\.tmp$/;

/** a directory's names as listNames gives them: sorted, without our temp files */
export function listedNames(names: string[]): string[] {
  // temp files start with '.'; testing the first character spares the regex for the rest
  return names.filter((n) => n.charCodeAt(0) !== 0x2e || !TEMP_FILE.test(n)).sort();
}

/** error codes that mean "nothing at this path" (ENOTDIR: a parent is a file) */
export const MISSING = ['ENOENT', 'ENOTDIR'];
/** putContent's attempts when its directory disappears under it */
const WRITE_ATTEMPTS = 3;

/**
 * childrenVersion vouches for a directory only when its last change (mtime, ctime) is at least
 * this much older than the clock before its stat: a change in the same timestamp tick as a listing
 * leaves the mtime as it was, and timestamps can be coarse (1-2 s on some filesystems). Hosts that
 * share the root must keep their clocks closer than this.
 */
const SETTLE_MS = 2000;


/**
 * An fs call through its callback API: stat and readdir run at about twice the rate of
 * fs/promises' under many concurrent calls, and with the metadata cache a stat is most of what a
 * HEAD costs (docs/decisions.md, "Metadata cache"). Whole files likewise (readFile below).
 */
function viaCallback<T>(call: (done: (err: NodeJS.ErrnoException | null, value: T) => void) => void): Promise<T> {
  return new Promise((resolve, reject) => call((err, value) => (err ? reject(err) : resolve(value))));
}

const stat = (path: string) => viaCallback<Stats>((done) => statWithCallback(path, done));
const statBig = (path: string) => viaCallback<BigIntStats>((done) => statWithCallback(path, { bigint: true }, done));
const readdir = (path: string) => viaCallback<string[]>((done) => readdirWithCallback(path, done));
/** a small file through the callback API: 34-39 µs of CPU against fs/promises' 55-58 (no FileHandle; the offline collection reads one per link and manifest) */
const readFile = (path: string) => viaCallback<Buffer>((done) => readFileWithCallback(path, done));

export function toStorageError(err: unknown, path: string, missing = MISSING): StorageError {
  if (missing.includes((err as NodeJS.ErrnoException)?.code ?? '')) return new PathNotFoundError(path, NAME);
  const message = err instanceof Error ? err.message : String(err);
  if (isStorageFull(err)) return new StorageFullError(`${NAME}: ${path}: ${message}`, NAME, { cause: err });
  return new StorageError(`${NAME}: ${path}: ${message}`, NAME, { cause: err });
}


export class FilesystemDriver extends BaseDriver {
  readonly name = NAME;
  private readonly root: string;
  private readonly settleMs: number;
  /** why the root could not be created, reported by ready() as one line naming the key */
  private readonly rootProblem?: string;

  /** settleMs: childrenVersion's margin (default SETTLE_MS); tests shorten it */
  constructor(options: { rootdirectory: string; settleMs?: number }) {
    super();
    this.root = options.rootdirectory;
    this.settleMs = options.settleMs ?? SETTLE_MS;
    // The root always exists, so list('/') and walk('/') of a new registry see an empty tree.
    try {
      mkdirSync(this.root, { recursive: true });
    } catch (err) {
      this.rootProblem = (err as Error).message;
    }
  }

  /** the root is a directory this process reaches (created at construction if missing; removed since counts as empty) */
  async ready(): Promise<void> {
    if (this.rootProblem) throw new StorageError(`storage.filesystem.rootdirectory: cannot use ${this.root}: ${this.rootProblem}`, NAME);
    await stat(this.root).catch((err) => {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw toStorageError(err, '/');
    });
  }

  protected local(path: string): string {
    return join(this.root, path);
  }

  private readonly smallFiles = new SmallFileReader();

  async readSmallFiles(paths: readonly string[]): Promise<(SmallFile | undefined)[]> {
    for (const path of paths) checkPath(path, this.name);
    return this.smallFiles.read(
      paths.map((path) => this.local(path)),
      (i, err) => toStorageError(err, paths[i]),
    );
  }

  async inspectDirectories(queries: readonly DirectoryQuery[]): Promise<DirectoryFacts[]> {
    for (const q of queries) {
      checkDirPath(q.path, this.name);
      if (q.below !== undefined) checkPath(`/${q.below}`, this.name);
    }
    return this.smallFiles.inspect(
      queries.map((q) => ({ ...q, path: this.local(q.path) })),
      this.settleMs,
      TEMP_FILE,
      (i, err) => toStorageError(err, queries[i].path),
    );
  }

  async close(): Promise<void> {
    await this.smallFiles.close();
  }

  protected async _getContent(path: string): Promise<Buffer> {
    try {
      return await readFile(this.local(path));
    } catch (err) {
      throw toStorageError(err, path, [...MISSING, 'EISDIR']);
    }
  }

  protected async _putContent(path: string, data: Buffer, options?: PutOptions): Promise<void> {
    const file = this.local(path);
    // a concurrent delete of a parent directory (a manifest DELETE racing a PUT) can remove it
    // between mkdir and rename: the write starts again in a fresh directory
    for (let attempt = 1; ; attempt++) {
      const temp = join(dirname(file), `.${basename(file)}.${randomBytes(8).toString('hex')}.tmp`);
      try {
        await mkdir(dirname(file), { recursive: true });
        const fh = await open(temp, 'wx', options?.secret ? 0o600 : 0o666);
        try {
          await fh.writeFile(data);
          await fh.sync(); // so a crash after the rename cannot leave an empty file behind
        } finally {
          await fh.close();
        }
        await rename(temp, file);
        return;
      } catch (err) {
        await rm(temp, { force: true });
        if ((err as NodeJS.ErrnoException).code === 'ENOENT' && attempt < WRITE_ATTEMPTS) continue;
        throw toStorageError(err, path, []);
      }
    }
  }

  protected async _reader(path: string, offset: number, length: number | undefined): Promise<Readable> {
    let fh: FileHandle;
    try {
      fh = await open(this.local(path), 'r');
    } catch (err) {
      throw toStorageError(err, path);
    }
    try {
      // stat the open handle: it is the file we will stream, even if the path is replaced meanwhile
      const st = await fh.stat();
      if (st.isDirectory()) throw new PathNotFoundError(path, NAME);
      if (offset > st.size) throw new InvalidOffsetError(path, offset, NAME);
      return new FileReadStream(fh, offset, readEnd(offset, length, st.size), READ_CHUNK, LARGE_READS); // closes the handle at end or destroy
    } catch (err) {
      await fh.close();
      throw err instanceof StorageError ? err : toStorageError(err, path);
    }
  }

  protected async _writer(path: string, append: boolean): Promise<FileWriter> {
    const file = this.local(path);
    try {
      await mkdir(dirname(file), { recursive: true });
      const fh = await open(file, append ? 'a' : 'w');
      try {
        const { size } = await fh.stat();
        return new FsWriter(fh, file, path, size);
      } catch (err) {
        await fh.close();
        throw err;
      }
    } catch (err) {
      throw toStorageError(err, path, []);
    }
  }

  protected async _stat(path: string): Promise<FileInfo> {
    try {
      const st = await stat(this.local(path));
      const isDir = st.isDirectory();
      return { path, size: isDir ? 0 : st.size, modTime: st.mtime, isDir };
    } catch (err) {
      throw toStorageError(err, path);
    }
  }

  /**
   * dev, inode and mtime of the directory, handed out only once its last change is older than
   * settleMs: the later of mtime and ctime (which nothing can set back, unlike mtime)
   */
  protected async _childrenVersion(path: string): Promise<string | undefined> {
    const now = Date.now(); // before the stat: a change after it gets a later mtime
    let st;
    try {
      st = await statBig(this.local(path));
    } catch (err) {
      throw toStorageError(err, path);
    }
    if (!st.isDirectory()) throw new PathNotFoundError(path, NAME);
    const changed = st.mtimeMs > st.ctimeMs ? st.mtimeMs : st.ctimeMs;
    if (Number(changed) > now - this.settleMs) return undefined;
    return `${st.dev}:${st.ino}:${st.mtimeNs}`;
  }

  /** sorted names of the entries in a directory, without our temp files */
  protected async _listNames(path: string): Promise<string[]> {
    try {
      return listedNames(await readdir(this.local(path)));
    } catch (err) {
      throw toStorageError(err, path);
    }
  }

  protected async _move(src: string, dst: string): Promise<void> {
    // stat first so a missing src does not leave dst's parent directories behind
    await this._stat(src);
    const target = this.local(dst);
    try {
      await mkdir(dirname(target), { recursive: true });
      await rename(this.local(src), target);
    } catch (err) {
      throw toStorageError(err, src);
    }
  }

  protected async _delete(path: string): Promise<void> {
    try {
      // without force: ENOENT when missing; ENOTEMPTY (a file written meanwhile) is retried
      await rm(this.local(path), { recursive: true, maxRetries: 3 });
    } catch (err) {
      throw toStorageError(err, path);
    }
  }
}

class FsWriter implements FileWriter {
  private finished = false;
  /** writes run one after another; a failed write fails every later one */
  private pending: Promise<void> = Promise.resolve();

  constructor(
    private readonly fh: FileHandle,
    private readonly file: string,
    private readonly path: string,
    public size: number,
  ) {}

  write(data: Buffer | readonly Buffer[]): Promise<void> {
    if (this.finished) return Promise.reject(this.finishedError());
    const chunks = chunksOf(data);
    this.pending = this.pending.then(() => this.writeAll(chunks));
    return this.pending;
  }

  /** one writev for all chunks (no copy into one buffer); continues after a short write */
  private async writeAll(chunks: readonly Buffer[]): Promise<void> {
    let left = chunks.filter((c) => c.length > 0);
    try {
      while (left.length > 0) {
        const { bytesWritten } = await this.fh.writev(left);
        this.size += bytesWritten;
        left = withoutFirstBytes(left, bytesWritten);
      }
    } catch (err) {
      throw toStorageError(err, this.path, []);
    }
  }

  close(): Promise<void> {
    return this.finish(false);
  }

  commit(): Promise<void> {
    return this.finish(true);
  }

  async cancel(): Promise<void> {
    if (this.finished) throw this.finishedError();
    await this.finish(false).catch(() => {}); // a failed write does not matter: the file goes
    await rm(this.file, { force: true });
  }

  private async finish(sync: boolean): Promise<void> {
    if (this.finished) throw this.finishedError();
    this.finished = true;
    try {
      await this.pending;
      if (sync) await this.fh.sync();
    } finally {
      await this.fh.close();
    }
  }

  private finishedError(): UnsupportedMethodError {
    return new UnsupportedMethodError(`${NAME}: writer for ${this.path} already closed`, NAME);
  }
}

/** `chunks` less their first `count` bytes */
function withoutFirstBytes(chunks: readonly Buffer[], count: number): Buffer[] {
  const rest: Buffer[] = [];
  for (const chunk of chunks) {
    if (count >= chunk.length) {
      count -= chunk.length;
      continue;
    }
    rest.push(count > 0 ? chunk.subarray(count) : chunk);
    count = 0;
  }
  return rest;
}
