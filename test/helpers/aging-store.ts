/**
 * A store whose clock a test moves forward, for code that reads time only from the store (the
 * online collection: the modification times of what it finds, against that of a marker it
 * writes). Every file reports the inner driver's modification time plus the offset in force when
 * it was written, so `age(ms)` makes everything written so far ms older than what comes next,
 * as if ms had passed, without a real sleep:
 *
 *   const registry = await startBerth(overrides, { driver, wrapDriver: (inner) => (store = new AgingStore(inner)) });
 *   await store.age(AGED_MS);
 *
 * A move keeps the offset of its source when the store keeps the source's modification time
 * (a rename on the filesystem) and takes the current one when it stamps the copy anew (S3:
 * `moveSetsModTime`).
 */
import type { FileInfo, FileWriter, StorageDriver, WalkFn, WalkOptions } from '../../src/storage/driver.js';
import { ForwardingDriver } from '../../src/storage/forwarding.js';

export class AgingStore extends ForwardingDriver {
  private offset = 0;
  /** path -> the offset when it was last written */
  private readonly written = new Map<string, number>();

  /** what was written so far is `ms` older for everything written after */
  age(ms: number): void {
    this.offset += ms;
  }

  private shifted(path: string, info: FileInfo): FileInfo {
    return { ...info, modTime: new Date(info.modTime.getTime() + (this.written.get(path) ?? 0)) };
  }

  override async putContent(path: string, data: Buffer): Promise<void> {
    this.written.set(path, this.offset);
    await super.putContent(path, data);
  }

  override async writer(path: string, append: boolean): Promise<FileWriter> {
    const writer = await super.writer(path, append);
    this.written.set(path, this.offset);
    const mark = () => this.written.set(path, this.offset);
    return {
      get size() {
        return writer.size;
      },
      write: async (data) => {
        mark();
        await writer.write(data);
      },
      close: () => writer.close(),
      commit: () => writer.commit(),
      cancel: () => writer.cancel(),
    };
  }

  override async move(src: string, dst: string): Promise<void> {
    await super.move(src, dst);
    this.written.set(dst, this.inner.moveSetsModTime ? this.offset : (this.written.get(src) ?? 0));
  }

  override async stat(path: string): Promise<FileInfo> {
    return this.shifted(path, await super.stat(path));
  }

  override walk(path: string, fn: WalkFn, options?: WalkOptions): Promise<void> {
    return super.walk(path, (info) => fn(this.shifted(info.path, info)), options);
  }

  override get listFiles(): StorageDriver['listFiles'] {
    const list = super.listFiles;
    return list && (async (path) => (await list(path)).map((info) => this.shifted(info.path, info)));
  }
}
