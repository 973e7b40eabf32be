/**
 * The filesystem driver for a maintenance command that has its process to itself (`berth
 * garbage-collect`): reads, listings and stats are synchronous calls on the main thread, and a
 * delete removes its tree by listing each directory once and unlinking what it holds, the
 * unlinks and rmdirs on libuv's pool so they run beside the main thread's reads.
 *
 * Why: through libuv every small call is a hand-off to a pool thread and back with a promise;
 * on the offline collection's 3,000 repositories that was 470,000 hand-off syscalls beside
 * 396,000 on files, and most of the command's CPU. A cached file's open, read and close cost a
 * few µs each done in place. fs.rm's recursive delete tries rmdir before listing (a failing call
 * per directory) and lstats every entry; here one lstat of the path, one listing per directory
 * (its entries' types come with it), an unlink per file and an rmdir per directory
 * (docs/performance.md, "Offline garbage collection"; docs/decisions.md).
 *
 * Never for the server: a blocking call stalls every request behind it.
 */
import { lstatSync, readdirSync, readFileSync, rmdir as rmdirWithCallback, statSync, unlink as unlinkWithCallback } from 'node:fs';
import { FilesystemDriver, listedNames, MISSING, toStorageError } from './filesystem.js';
import { checkDirPath, PathNotFoundError, unlessMissing, type DirectoryFacts, type DirectoryQuery, type FileInfo } from './driver.js';

/** a directory's removal is tried again this often when a file appears in it meanwhile (ENOTEMPTY), as fs.rm's maxRetries */
const REMOVE_ATTEMPTS = 3;

const done = (resolve: () => void, reject: (err: Error) => void) => (err: NodeJS.ErrnoException | null) => (err ? reject(err) : resolve());
const unlink = (path: string) => new Promise<void>((resolve, reject) => unlinkWithCallback(path, done(resolve, reject)));
const rmdir = (path: string) => new Promise<void>((resolve, reject) => rmdirWithCallback(path, done(resolve, reject)));

export class BlockingFilesystemDriver extends FilesystemDriver {
  protected override async _getContent(path: string): Promise<Buffer> {
    try {
      return readFileSync(this.local(path));
    } catch (err) {
      throw toStorageError(err, path, [...MISSING, 'EISDIR']);
    }
  }

  protected override async _listNames(path: string): Promise<string[]> {
    try {
      return listedNames(readdirSync(this.local(path)));
    } catch (err) {
      throw toStorageError(err, path);
    }
  }

  /**
   * a walk's listings (names alone: repositoryNames asks 256 directories at a time) in place like
   * listNames; anything more of the small-files worker threads as the ordinary driver. Those
   * threads were two more V8 isolates, about 23 MiB of the offline collection's peak RSS
   */
  override async inspectDirectories(queries: readonly DirectoryQuery[]): Promise<DirectoryFacts[]> {
    if (queries.some((q) => q.version || q.below !== undefined || !q.names)) return super.inspectDirectories(queries);
    for (const q of queries) checkDirPath(q.path, this.name);
    const facts: DirectoryFacts[] = [];
    for (const q of queries) {
      const names = await unlessMissing(this._listNames(q.path));
      facts.push(names === undefined ? { exists: false } : { exists: true, names });
    }
    return facts;
  }

  protected override async _stat(path: string): Promise<FileInfo> {
    let st;
    try {
      st = statSync(this.local(path), { throwIfNoEntry: false });
    } catch (err) {
      throw toStorageError(err, path);
    }
    if (st === undefined) throw new PathNotFoundError(path, this.name);
    const isDir = st.isDirectory();
    return { path, size: isDir ? 0 : st.size, modTime: st.mtime, isDir };
  }

  protected override async _delete(path: string): Promise<void> {
    const local = this.local(path);
    try {
      // lstat: a symbolic link is removed itself, never the tree it points at (as fs.rm)
      const st = lstatSync(local, { throwIfNoEntry: false });
      if (st === undefined) throw new PathNotFoundError(path, this.name);
      await (st.isDirectory() ? removeTree(local) : unlink(local));
    } catch (err) {
      throw err instanceof PathNotFoundError ? err : toStorageError(err, path);
    }
  }
}

/** a local directory and everything below it; what is already gone below it does not matter */
async function removeTree(dir: string): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    const entries = readdirSync(dir, { withFileTypes: true });
    await Promise.all(entries.map((entry) => (entry.isDirectory() ? removeTree(`${dir}/${entry.name}`) : unlink(`${dir}/${entry.name}`)).catch(unlessGone)));
    try {
      return await rmdir(dir);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOTEMPTY' || attempt === REMOVE_ATTEMPTS) throw err;
    }
  }
}

function unlessGone(err: NodeJS.ErrnoException): void {
  if (err.code !== 'ENOENT') throw err;
}
