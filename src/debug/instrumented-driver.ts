/**
 * A storage driver wrapper that times every call for the Prometheus metrics. Streams (reader,
 * writer) are timed until they are open, not while data flows.
 */
import type { Readable } from 'node:stream';
import { PathNotFoundError, type FileInfo, type FileWriter, type PutOptions, type RedirectRequest, type StorageDriver, type WalkFn, type WalkOptions } from '../storage/driver.js';
import { ForwardingDriver } from '../storage/forwarding.js';
import type { Metrics } from './prometheus.js';

export class InstrumentedDriver extends ForwardingDriver {
  constructor(
    inner: StorageDriver,
    private readonly metrics: Metrics,
  ) {
    super(inner);
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

  override getContent(path: string): Promise<Buffer> {
    return this.time('getcontent', () => super.getContent(path));
  }
  override putContent(path: string, data: Buffer, options?: PutOptions): Promise<void> {
    return this.time('putcontent', () => super.putContent(path, data, options));
  }
  override reader(path: string, offset?: number, length?: number): Promise<Readable> {
    return this.time('reader', () => super.reader(path, offset, length));
  }
  override writer(path: string, append: boolean): Promise<FileWriter> {
    return this.time('writer', () => super.writer(path, append));
  }
  override stat(path: string): Promise<FileInfo> {
    return this.time('stat', () => super.stat(path));
  }
  override list(path: string): Promise<string[]> {
    return this.time('list', () => super.list(path));
  }
  override listNames(path: string): Promise<string[]> {
    return this.time('listnames', () => super.listNames(path));
  }
  override childrenVersion(path: string): Promise<string | undefined> {
    return this.time('childrenversion', () => super.childrenVersion(path));
  }
  override move(src: string, dst: string): Promise<void> {
    return this.time('move', () => super.move(src, dst));
  }
  override delete(path: string): Promise<void> {
    return this.time('delete', () => super.delete(path));
  }
  override redirectURL(req: RedirectRequest, path: string): Promise<string | undefined> {
    return this.time('redirecturl', () => super.redirectURL(req, path));
  }
  override walk(path: string, fn: WalkFn, options?: WalkOptions): Promise<void> {
    return this.time('walk', () => super.walk(path, fn, options));
  }
}
