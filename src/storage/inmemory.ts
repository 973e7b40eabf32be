/**
 * Keeps everything in a tree of Maps: for tests and throwaway registries. Directories exist only
 * while something lies below them, as in an object store.
 */
import { randomBytes } from 'node:crypto';
import { Readable } from 'node:stream';
import { BaseDriver } from './base.js';
import {
  InvalidOffsetError,
  PathNotFoundError,
  StorageError,
  UnsupportedMethodError,
  type FileInfo,
  type FileWriter,
  readEnd,
  chunksOf,
} from './driver.js';

const NAME = 'inmemory';

class MemFile {
  /** content as written; joined only when read whole, so a write costs no copy of the file */
  chunks: Buffer[] = [];
  size = 0;
  modTime = new Date();

  append(chunk: Buffer): void {
    this.chunks.push(Buffer.from(chunk)); // a copy: the caller may reuse its buffer
    this.size += chunk.length;
    this.modTime = new Date();
  }
}

let dirsMade = 0;
/** names this process's in-memory directories in childrenVersion tokens */
const STORE_ID = randomBytes(6).toString('hex');

class MemDir {
  readonly children = new Map<string, MemFile | MemDir>();
  readonly modTime = new Date();
  /** unique among all in-memory directories, so a directory made anew never repeats a token */
  readonly id = ++dirsMade;
  /** counts additions, replacements and removals of children (childrenVersion) */
  changes = 0;

  /** sets a child, new or replacing one (putContent, move): a change either way */
  set(name: string, node: MemFile | MemDir): void {
    this.changes++;
    this.children.set(name, node);
  }

  delete(name: string): void {
    if (this.children.delete(name)) this.changes++;
  }
}


/** path '/a/b/c' -> ['a', 'b', 'c']; '/' -> [] */
function segments(path: string): string[] {
  return path === '/' ? [] : path.slice(1).split('/');
}

/** the bytes [offset, end) of a file held as `chunks` */
async function* chunksFrom(chunks: Buffer[], offset: number, end: number): AsyncGenerator<Buffer> {
  let chunkStart = 0;
  for (const chunk of chunks) {
    const chunkEnd = chunkStart + chunk.length;
    if (chunkEnd > offset && chunkStart < end) {
      yield chunk.subarray(Math.max(0, offset - chunkStart), Math.min(chunk.length, end - chunkStart));
    }
    chunkStart = chunkEnd;
  }
}

export class InMemoryDriver extends BaseDriver {
  readonly name = NAME;
  private readonly root = new MemDir();

  private lookup(path: string): MemFile | MemDir | undefined {
    let node: MemFile | MemDir | undefined = this.root;
    for (const name of segments(path)) {
      node = node instanceof MemDir ? node.children.get(name) : undefined;
    }
    return node;
  }

  private file(path: string): MemFile {
    const node = this.lookup(path);
    if (!(node instanceof MemFile)) throw new PathNotFoundError(path, NAME);
    return node;
  }

  private dir(path: string): MemDir {
    const node = this.lookup(path);
    if (!(node instanceof MemDir)) throw new PathNotFoundError(path, NAME);
    return node;
  }

  /** puts node at path, creating parent directories; replaces a file there, not a directory */
  private place(path: string, node: MemFile | MemDir): void {
    const names = segments(path);
    const last = names.pop()!;
    let dir = this.root;
    for (const name of names) {
      let next = dir.children.get(name);
      if (next === undefined) dir.set(name, (next = new MemDir()));
      if (!(next instanceof MemDir)) throw new StorageError(`${NAME}: not a directory: ${name} in ${path}`, NAME);
      dir = next;
    }
    if (dir.children.get(last) instanceof MemDir) throw new StorageError(`${NAME}: is a directory: ${path}`, NAME);
    dir.set(last, node);
  }

  /** removes the node at path and the directories it leaves empty */
  private remove(path: string): void {
    const names = segments(path);
    const dirs = [this.root];
    for (const name of names.slice(0, -1)) dirs.push(dirs[dirs.length - 1].children.get(name) as MemDir);
    for (let i = names.length - 1; i >= 0; i--) {
      dirs[i].delete(names[i]);
      if (i === 0 || dirs[i].children.size > 0) break;
    }
  }

  protected async _getContent(path: string): Promise<Buffer> {
    return Buffer.concat(this.file(path).chunks); // always a copy
  }

  protected async _putContent(path: string, data: Buffer): Promise<void> {
    const file = new MemFile();
    file.append(data);
    this.place(path, file); // swapping in a finished node is what makes it atomic
  }

  protected async _reader(path: string, offset: number, length: number | undefined): Promise<Readable> {
    const file = this.file(path);
    if (offset > file.size) throw new InvalidOffsetError(path, offset, NAME);
    // chunks are never changed once appended, so a copy of the list is a consistent snapshot
    return Readable.from(chunksFrom([...file.chunks], offset, readEnd(offset, length, file.size)), { objectMode: false });
  }

  protected async _writer(path: string, append: boolean): Promise<FileWriter> {
    let file = append ? this.lookup(path) : undefined;
    if (!(file instanceof MemFile)) this.place(path, (file = new MemFile()));
    return new MemWriter(file, path, () => {
      if (this.lookup(path) === file) this.remove(path);
    });
  }

  protected async _stat(path: string): Promise<FileInfo> {
    const node = this.lookup(path);
    if (node === undefined) throw new PathNotFoundError(path, NAME);
    const isDir = node instanceof MemDir;
    return { path, size: isDir ? 0 : node.size, modTime: node.modTime, isDir };
  }

  protected async _listNames(path: string): Promise<string[]> {
    return [...this.dir(path).children.keys()].sort();
  }

  /**
   * exact: the directory's identity and its count of added, replaced and removed children, after
   * a random name of this process's store, so tokens of two stores never match (the metadata
   * cache can be shared between processes through Redis)
   */
  protected async _childrenVersion(path: string): Promise<string | undefined> {
    const dir = this.dir(path);
    return `${STORE_ID}:${dir.id}:${dir.changes}`;
  }

  protected async _move(src: string, dst: string): Promise<void> {
    const node = this.lookup(src);
    if (node === undefined) throw new PathNotFoundError(src, NAME);
    if (src === dst) return;
    this.place(dst, node);
    this.remove(src);
  }

  protected async _delete(path: string): Promise<void> {
    if (this.lookup(path) === undefined) throw new PathNotFoundError(path, NAME);
    this.remove(path);
  }
}

class MemWriter implements FileWriter {
  private finished = false;

  constructor(
    private readonly file: MemFile,
    private readonly path: string,
    private readonly discard: () => void,
  ) {}

  get size(): number {
    return this.file.size;
  }

  async write(data: Buffer | readonly Buffer[]): Promise<void> {
    this.check();
    for (const chunk of chunksOf(data)) this.file.append(chunk);
  }

  async close(): Promise<void> {
    this.check();
    this.finished = true;
  }

  async commit(): Promise<void> {
    return this.close();
  }

  async cancel(): Promise<void> {
    await this.close();
    this.discard();
  }

  private check(): void {
    if (this.finished) throw new UnsupportedMethodError(`${NAME}: writer for ${this.path} already closed`, NAME);
  }
}
