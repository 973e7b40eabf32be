/**
 * The base of wrappers around a driver (the metrics wrapper, storage middleware): every method
 * forwards to the inner driver, so a wrapper overrides only what it changes. The inner driver
 * checks the paths.
 */
import type { Readable } from 'node:stream';
import type { FileInfo, FileWriter, PutOptions, RedirectRequest, StorageDriver, WalkFn, WalkOptions } from './driver.js';

export class ForwardingDriver implements StorageDriver {
  constructor(protected readonly inner: StorageDriver) {}

  get name(): string {
    return this.inner.name;
  }
  getContent(path: string): Promise<Buffer> {
    return this.inner.getContent(path);
  }
  putContent(path: string, data: Buffer, options?: PutOptions): Promise<void> {
    return this.inner.putContent(path, data, options);
  }
  reader(path: string, offset?: number, length?: number): Promise<Readable> {
    return this.inner.reader(path, offset, length);
  }
  writer(path: string, append: boolean): Promise<FileWriter> {
    return this.inner.writer(path, append);
  }
  stat(path: string): Promise<FileInfo> {
    return this.inner.stat(path);
  }
  list(path: string): Promise<string[]> {
    return this.inner.list(path);
  }
  listNames(path: string): Promise<string[]> {
    return this.inner.listNames(path);
  }
  childrenVersion(path: string): Promise<string | undefined> {
    return this.inner.childrenVersion(path);
  }
  move(src: string, dst: string): Promise<void> {
    return this.inner.move(src, dst);
  }
  delete(path: string): Promise<void> {
    return this.inner.delete(path);
  }
  redirectURL(req: RedirectRequest, path: string): Promise<string | undefined> {
    return this.inner.redirectURL(req, path);
  }
  walk(path: string, fn: WalkFn, options?: WalkOptions): Promise<void> {
    return this.inner.walk(path, fn, options);
  }
  async ready(): Promise<void> {
    await this.inner.ready?.();
  }
  async close(): Promise<void> {
    await this.inner.close?.();
  }
  /** the inner driver's, when it has one */
  get readSmallFiles(): StorageDriver['readSmallFiles'] {
    return this.inner.readSmallFiles?.bind(this.inner);
  }
  get inspectDirectories(): StorageDriver['inspectDirectories'] {
    return this.inner.inspectDirectories?.bind(this.inner);
  }
  get listFiles(): StorageDriver['listFiles'] {
    return this.inner.listFiles?.bind(this.inner);
  }
  get deleteFiles(): StorageDriver['deleteFiles'] {
    return this.inner.deleteFiles?.bind(this.inner);
  }
  get moveSetsModTime(): boolean | undefined {
    return this.inner.moveSetsModTime;
  }
}
