/**
 * A storage driver wrapper that times every call for the Prometheus metrics. Streams (reader,
 * writer) are timed until they are open, not while data flows.
 */
import type { Readable } from 'node:stream';
import { PathNotFoundError, type FileInfo, type FileWriter, type RedirectRequest, type StorageDriver, type WalkFn, type WalkOptions } from '../storage/driver.js';
import type { Metrics } from './prometheus.js';

export class InstrumentedDriver implements StorageDriver {
  constructor(
    private readonly inner: StorageDriver,
    private readonly metrics: Metrics,
  ) {}

  get name(): string {
    return this.inner.name;
  }

  private async time<T>(operation: string, work: () => Promise<T>): Promise<T> {
    const start = process.hrtime.bigint();
    let outcome: 'ok' | 'notfound' | 'error' = 'ok';
    try {
      return await work();
    } catch (err) {
      outcome = err instanceof PathNotFoundError ? 'notfound' : 'error';
      throw err;
    } finally {
      this.metrics.observeStorage(this.inner.name, operation, outcome, Number(process.hrtime.bigint() - start) / 1e9);
    }
  }

  async ready(): Promise<void> {
    await this.inner.ready?.();
  }
  getContent(path: string): Promise<Buffer> {
    return this.time('getcontent', () => this.inner.getContent(path));
  }
  putContent(path: string, data: Buffer): Promise<void> {
    return this.time('putcontent', () => this.inner.putContent(path, data));
  }
  reader(path: string, offset?: number, length?: number): Promise<Readable> {
    return this.time('reader', () => this.inner.reader(path, offset, length));
  }
  writer(path: string, append: boolean): Promise<FileWriter> {
    return this.time('writer', () => this.inner.writer(path, append));
  }
  stat(path: string): Promise<FileInfo> {
    return this.time('stat', () => this.inner.stat(path));
  }
  list(path: string): Promise<string[]> {
    return this.time('list', () => this.inner.list(path));
  }
  listNames(path: string): Promise<string[]> {
    return this.time('listnames', () => this.inner.listNames(path));
  }
  childrenVersion(path: string): Promise<string | undefined> {
    return this.time('childrenversion', () => this.inner.childrenVersion(path));
  }
  move(src: string, dst: string): Promise<void> {
    return this.time('move', () => this.inner.move(src, dst));
  }
  delete(path: string): Promise<void> {
    return this.time('delete', () => this.inner.delete(path));
  }
  redirectURL(req: RedirectRequest, path: string): Promise<string | undefined> {
    return this.time('redirecturl', () => this.inner.redirectURL(req, path));
  }
  walk(path: string, fn: WalkFn, options?: WalkOptions): Promise<void> {
    return this.time('walk', () => this.inner.walk(path, fn, options));
  }
  async close(): Promise<void> {
    await this.inner.close?.();
  }
}
