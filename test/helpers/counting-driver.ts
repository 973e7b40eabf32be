/**
 * A driver that records the store calls made, as "method path-tail" (e.g. "getContent startedat"),
 * and the calls on the writers it opened ("write data", "close data", ...), to assert how many
 * round trips to the store a request costs.
 */
import type { FileInfo, FileWriter } from '../../src/storage/driver.js';
import { ForwardingDriver } from '../../src/storage/forwarding.js';

const WRITER_METHODS = new Set(['write', 'close', 'commit', 'cancel']);

export class CountingDriver extends ForwardingDriver {
  calls: string[] = [];

  /** the calls on the driver itself, without those on its writers */
  storeCalls(): string[] {
    return this.calls.filter((call) => !WRITER_METHODS.has(call.split(' ')[0]!));
  }

  private note(method: string, path: string): void {
    this.calls.push(`${method} ${path.split('/').slice(-1)[0]}`);
  }
  override getContent(path: string): Promise<Buffer> {
    this.note('getContent', path);
    return super.getContent(path);
  }
  override putContent(path: string, data: Buffer): Promise<void> {
    this.note('putContent', path);
    return super.putContent(path, data);
  }
  override stat(path: string): Promise<FileInfo> {
    this.note('stat', path);
    return super.stat(path);
  }
  override async writer(path: string, append: boolean): Promise<FileWriter> {
    this.note('writer', path);
    const writer = await super.writer(path, append);
    const note = (method: string) => this.note(method, path);
    return {
      get size() {
        return writer.size;
      },
      write: (data) => (note('write'), writer.write(data)),
      close: () => (note('close'), writer.close()),
      commit: () => (note('commit'), writer.commit()),
      cancel: () => (note('cancel'), writer.cancel()),
    };
  }
}
