/**
 * Bounds on single store calls (storage.calls): a call that takes longer than `slowMs` is logged,
 * one that takes longer than `timeoutMs` fails with StorageUnavailableError (the request answers
 * 503 with Retry-After) while the call itself is left to finish or fail on its own: neither the
 * filesystem nor the SDK can take back what they started.
 *
 * Only calls that are one round trip are bounded: reads and writes of small files, stats,
 * listings, and opening a reader or writer (not the bytes that flow through it). Moves, deletes
 * and walks are not: a multipart copy of a large blob or the delete of a big directory may
 * rightly take minutes. They are still logged when slow.
 */
import type { Readable } from 'node:stream';
import type { Logger } from 'pino';
import { StorageUnavailableError, type FileInfo, type FileWriter, type PutOptions, type RedirectRequest, type StorageDriver, type WalkFn, type WalkOptions } from './driver.js';
import { ForwardingDriver } from './forwarding.js';

export interface DeadlineOptions {
  /** 0: no bound */
  timeoutMs: number;
  /** 0: nothing is logged */
  slowMs: number;
}

export class DeadlineDriver extends ForwardingDriver {
  constructor(
    inner: StorageDriver,
    private readonly options: DeadlineOptions,
    private readonly logger: Pick<Logger, 'warn'>,
  ) {
    super(inner);
  }

  private async call<T>(operation: string, path: string, bounded: boolean, work: () => Promise<T>): Promise<T> {
    const started = Date.now();
    const { timeoutMs, slowMs } = this.options;
    let timer: NodeJS.Timeout | undefined;
    const deadline =
      bounded && timeoutMs > 0
        ? new Promise<never>((_, reject) => {
            timer = setTimeout(() => {
              this.logger.warn({ driver: this.inner.name, operation, path, timeoutMs }, 'storage call timed out; the request answers 503');
              reject(new StorageUnavailableError(`${this.inner.name}: ${operation} ${path}: no answer within ${timeoutMs / 1000}s (storage.calls.timeout)`, this.inner.name));
            }, timeoutMs);
          })
        : undefined;
    try {
      return await (deadline ? Promise.race([work(), deadline]) : work());
    } finally {
      clearTimeout(timer);
      const ms = Date.now() - started;
      if (slowMs > 0 && ms >= slowMs && (!deadline || ms < timeoutMs)) this.logger.warn({ driver: this.inner.name, operation, path, ms }, 'slow storage call');
    }
  }

  override getContent(path: string): Promise<Buffer> {
    return this.call('getcontent', path, true, () => super.getContent(path));
  }
  override putContent(path: string, data: Buffer, options?: PutOptions): Promise<void> {
    return this.call('putcontent', path, true, () => super.putContent(path, data, options));
  }
  override reader(path: string, offset?: number, length?: number): Promise<Readable> {
    return this.call('reader', path, true, () => super.reader(path, offset, length));
  }
  override writer(path: string, append: boolean): Promise<FileWriter> {
    return this.call('writer', path, true, () => super.writer(path, append));
  }
  override stat(path: string): Promise<FileInfo> {
    return this.call('stat', path, true, () => super.stat(path));
  }
  override list(path: string): Promise<string[]> {
    return this.call('list', path, true, () => super.list(path));
  }
  override listNames(path: string): Promise<string[]> {
    return this.call('listnames', path, true, () => super.listNames(path));
  }
  override childrenVersion(path: string): Promise<string | undefined> {
    return this.call('childrenversion', path, true, () => super.childrenVersion(path));
  }
  override redirectURL(req: RedirectRequest, path: string): Promise<string | undefined> {
    return this.call('redirecturl', path, true, () => super.redirectURL(req, path));
  }
  override move(src: string, dst: string): Promise<void> {
    return this.call('move', src, false, () => super.move(src, dst));
  }
  override delete(path: string): Promise<void> {
    return this.call('delete', path, false, () => super.delete(path));
  }
  override walk(path: string, fn: WalkFn, options?: WalkOptions): Promise<void> {
    return this.call('walk', path, false, () => super.walk(path, fn, options));
  }
}
