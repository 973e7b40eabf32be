/**
 * The base every driver is built on. The public StorageDriver methods check their paths (and a
 * reader's offset) once, here, with errors naming the driver, and call the backend operation the
 * driver implements: the `_` methods, as Node's streams call `_read` and `_write`. A driver
 * implements only those, on paths already checked. `list` and `walk` are written here once, over
 * `_listNames` and `_stat`.
 */
import type { Readable } from 'node:stream';
import {
  checkDirPath,
  checkPath,
  childPath,
  InvalidOffsetError,
  pathSortKey,
  unlessMissing,
  type FileInfo,
  type FileWriter,
  type PutOptions,
  type RedirectRequest,
  type StorageDriver,
  type WalkFn,
  type WalkOptions,
} from './driver.js';

/** a child of a directory as walk visits it: its info when the listing already had it */
export interface WalkEntry {
  name: string;
  info?: FileInfo;
}

export abstract class BaseDriver implements StorageDriver {
  abstract readonly name: string;

  /** the backend operations, on checked paths (file paths, or directory paths that may be '/') */
  protected abstract _getContent(path: string): Promise<Buffer>;
  protected abstract _putContent(path: string, data: Buffer, options?: PutOptions): Promise<void>;
  /** `offset` is a non-negative integer; the driver checks it against the file's size */
  protected abstract _reader(path: string, offset: number, length: number | undefined): Promise<Readable>;
  protected abstract _writer(path: string, append: boolean): Promise<FileWriter>;
  protected abstract _stat(path: string): Promise<FileInfo>;
  protected abstract _listNames(dir: string): Promise<string[]>;
  protected abstract _childrenVersion(dir: string): Promise<string | undefined>;
  protected abstract _move(src: string, dst: string): Promise<void>;
  protected abstract _delete(path: string): Promise<void>;

  /** no URL of its own unless the driver has one */
  protected async _redirectURL(_req: RedirectRequest, _path: string): Promise<string | undefined> {
    return undefined;
  }

  /**
   * The children of `dir` as walk visits them, in code-unit order of their names; a missing
   * directory (or a file) is PathNotFoundError. By default the names alone: walk stats each child
   * just before visiting it. A driver whose listing already tells sizes and types returns them.
   */
  protected async _walkEntries(dir: string): Promise<WalkEntry[]> {
    return (await this._listNames(dir)).map((name) => ({ name }));
  }

  getContent(path: string): Promise<Buffer> {
    return this.checked(path, () => this._getContent(path));
  }

  putContent(path: string, data: Buffer, options?: PutOptions): Promise<void> {
    return this.checked(path, () => this._putContent(path, data, options));
  }

  async reader(path: string, offset = 0, length?: number): Promise<Readable> {
    checkPath(path, this.name);
    if (!Number.isSafeInteger(offset) || offset < 0) throw new InvalidOffsetError(path, offset, this.name);
    return this._reader(path, offset, length);
  }

  writer(path: string, append: boolean): Promise<FileWriter> {
    return this.checked(path, () => this._writer(path, append));
  }

  stat(path: string): Promise<FileInfo> {
    return this.checkedDir(path, () => this._stat(path));
  }

  async list(path: string): Promise<string[]> {
    return (await this.listNames(path)).map((name) => childPath(path, name));
  }

  listNames(path: string): Promise<string[]> {
    return this.checkedDir(path, () => this._listNames(path));
  }

  childrenVersion(path: string): Promise<string | undefined> {
    return this.checkedDir(path, () => this._childrenVersion(path));
  }

  async move(src: string, dst: string): Promise<void> {
    checkPath(src, this.name);
    checkPath(dst, this.name);
    return this._move(src, dst);
  }

  delete(path: string): Promise<void> {
    return this.checked(path, () => this._delete(path));
  }

  redirectURL(req: RedirectRequest, path: string): Promise<string | undefined> {
    return this.checked(path, () => this._redirectURL(req, path));
  }

  async walk(path: string, fn: WalkFn, options: WalkOptions = {}): Promise<void> {
    checkDirPath(path, this.name);
    const entries = await this._walkEntries(path); // a missing start directory is an error
    await this.walkEntries(path, entries, fn, options.startAfter);
  }

  /** Returns false when fn asked to stop. */
  private async walkDir(dir: string, fn: WalkFn, startAfter?: string): Promise<boolean> {
    const entries = await unlessMissing(this._walkEntries(dir));
    if (entries === undefined) return true; // deleted during the walk (by fn, say)
    return this.walkEntries(dir, entries, fn, startAfter);
  }

  private async walkEntries(dir: string, entries: WalkEntry[], fn: WalkFn, startAfter?: string): Promise<boolean> {
    for (const entry of entries) {
      const child = childPath(dir, entry.name);
      if (startAfter !== undefined && pathSortKey(child) <= pathSortKey(startAfter)) {
        // not visited; its subtree lies before the hint unless the hint is the child or inside it
        const holdsHint = child === startAfter || startAfter.startsWith(`${child}/`);
        if (holdsHint && entry.info?.isDir !== false && !(await this.walkDir(child, fn, startAfter))) return false;
        continue;
      }
      const info = entry.info ?? (await unlessMissing(this._stat(child)));
      if (info === undefined) continue; // deleted since the listing
      const control = await fn(info);
      if (control === 'stop') return false;
      if (info.isDir && control !== 'skip' && !(await this.walkDir(child, fn, startAfter))) return false;
    }
    return true;
  }

  private async checked<T>(path: string, work: () => Promise<T>): Promise<T> {
    checkPath(path, this.name);
    return work();
  }

  private async checkedDir<T>(path: string, work: () => Promise<T>): Promise<T> {
    checkDirPath(path, this.name);
    return work();
  }
}
