/**
 * The tests every StorageDriver must pass. Uses nothing but the StorageDriver interface, so the
 * same suite runs against the filesystem, in-memory and S3 drivers.
 */
import assert from 'node:assert/strict';
import { createHash, randomBytes, randomFillSync } from 'node:crypto';
import { Writable, type Readable } from 'node:stream';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import {
  InvalidOffsetError,
  InvalidPathError,
  PathNotFoundError,
  UnsupportedMethodError,
  type FileInfo,
  type StorageDriver,
  type WalkControl,
} from '../../src/storage/driver.js';

const MiB = 1024 * 1024;

export interface DriverSuiteOptions {
  /** size of the large streamed write (default 100 MiB) */
  largeFileBytes?: number;
  /**
   * allowed growth of RSS, and of memory still reachable after a GC, during the large write
   * (default 60 MiB); null: no check, for drivers that keep content in RAM by design
   */
  maxMemoryGrowthBytes?: number | null;
  /**
   * childrenVersion: 'never' for drivers that never vouch (always undefined); otherwise how long
   * after a change the driver may still answer undefined (default 0: it vouches at once)
   */
  childrenVersion?: 'never' | { settleMs: number };
}

/** pipes `stream` into a Writable that takes a while to finish each write and copies the bytes only then */
function pipeSlowly(stream: Readable): Promise<Buffer> {
  const copies: Buffer[] = [];
  const dest = new Writable({
    write(chunk: Buffer, _encoding, done) {
      setTimeout(() => {
        copies.push(Buffer.from(chunk));
        done();
      }, 2);
    },
  });
  return new Promise((resolve, reject) => {
    dest.on('finish', () => resolve(Buffer.concat(copies)));
    dest.on('error', reject);
    stream.on('error', reject);
    stream.pipe(dest);
  });
}

async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/**
 * A full garbage collection on demand. RSS alone misses a driver that holds on to chunks when
 * earlier tests left freed memory in the allocator for it to reuse; reachable memory after a GC
 * does not.
 */
function collectGarbage(): void {
  if (typeof globalThis.gc !== 'function') {
    setFlagsFromString('--expose-gc');
    globalThis.gc = runInNewContext('gc') as typeof globalThis.gc;
  }
  // twice: V8 releases the Buffers of unreachable ArrayBuffers in a sweep that may still be
  // running when gc() returns, and the next collection finishes it first
  globalThis.gc!();
  globalThis.gc!();
}

function reachableBytes(): number {
  collectGarbage();
  const { heapUsed, external } = process.memoryUsage(); // external includes Buffers
  return heapUsed + external;
}

function mib(bytes: number): string {
  return (bytes / MiB).toFixed(1);
}

export function runDriverSuite(
  name: string,
  makeDriver: () => Promise<{ driver: StorageDriver; cleanup(): Promise<void> }>,
  options: DriverSuiteOptions = {},
): void {
  const largeFileBytes = options.largeFileBytes ?? 100 * MiB;
  const maxGrowth = options.maxMemoryGrowthBytes === undefined ? 60 * MiB : options.maxMemoryGrowthBytes;
  const versions = options.childrenVersion ?? { settleMs: 0 };

  describe(`storage driver: ${name}`, () => {
    let driver: StorageDriver;
    let cleanup: () => Promise<void>;

    beforeEach(async () => {
      ({ driver, cleanup } = await makeDriver());
    });
    afterEach(async () => {
      await driver.close?.();
      await cleanup();
    });

    const notFound = (promise: Promise<unknown>) => assert.rejects(promise, PathNotFoundError);

    async function putAll(files: Record<string, string>): Promise<void> {
      for (const [path, content] of Object.entries(files)) await driver.putContent(path, Buffer.from(content));
    }

    describe('getContent and putContent', () => {
      it('round-trips empty, binary, 4 KiB and 4 KiB + 1 (a read\'s size and one more) and 1 MiB content', async () => {
        const values = [Buffer.alloc(0), Buffer.from(Array.from({ length: 256 }, (_, i) => i)), randomBytes(4096), randomBytes(4097), randomBytes(MiB)];
        for (const [i, value] of values.entries()) {
          await driver.putContent(`/round/trip/${i}`, value);
          assert.deepEqual(await driver.getContent(`/round/trip/${i}`), value);
        }
      });

      it('overwrites with shorter content', async () => {
        await driver.putContent('/over/write', Buffer.from('a longer first value'));
        await driver.putContent('/over/write', Buffer.from('short'));
        assert.equal((await driver.getContent('/over/write')).toString(), 'short');
        assert.equal((await driver.stat('/over/write')).size, 5);
      });

      it('reports missing files and directories as PathNotFoundError', async () => {
        await driver.putContent('/dir/file', Buffer.from('x'));
        await notFound(driver.getContent('/missing'));
        await notFound(driver.getContent('/dir/missing'));
        await notFound(driver.getContent('/dir'));
        await notFound(driver.getContent('/dir/file/below'));
      });

      it('is atomic: concurrent readers see a whole old or new value, never a mix', async () => {
        // version v is 4 MiB of the byte v, so one byte names the version a reader must have seen whole
        const versions = Array.from({ length: 16 }, (_, v) => Buffer.alloc(4 * MiB, v));
        await driver.putContent('/atomic/file', versions[0]);
        let writing = true;
        let reads = 0;
        const check = (seen: Buffer) => {
          assert.equal(seen.length, 4 * MiB);
          assert.ok(seen.equals(versions[seen[0]]), 'a read mixed two versions');
          reads++;
        };
        const reader = async (useStream: boolean) => {
          while (writing) {
            const path = '/atomic/file';
            check(useStream ? await readAll(await driver.reader(path)) : await driver.getContent(path));
          }
        };
        const readers = [reader(false), reader(false), reader(true), reader(true)];
        try {
          for (let round = 0; round < 3; round++) {
            for (const version of versions.slice(1)) await driver.putContent('/atomic/file', version);
          }
        } finally {
          writing = false;
        }
        await Promise.all(readers);
        assert.ok(reads > 0);
      });
    });

    describe('reader', () => {
      const content = Buffer.from('0123456789abcdef');

      it('reads from offset 0, the middle and the end', async () => {
        await driver.putContent('/r/file', content);
        assert.deepEqual(await readAll(await driver.reader('/r/file')), content);
        assert.deepEqual(await readAll(await driver.reader('/r/file', 0)), content);
        assert.deepEqual(await readAll(await driver.reader('/r/file', 10)), content.subarray(10));
        assert.equal((await readAll(await driver.reader('/r/file', content.length))).length, 0);
      });

      it('rejects offsets past the end or negative with InvalidOffsetError', async () => {
        await driver.putContent('/r/file', content);
        await assert.rejects(driver.reader('/r/file', content.length + 1), InvalidOffsetError);
        await assert.rejects(driver.reader('/r/file', -1), InvalidOffsetError);
      });

      it('reports a missing file as PathNotFoundError', async () => {
        await driver.putContent('/r/file', content);
        await notFound(driver.reader('/r/missing'));
        await notFound(driver.reader('/r'));
      });

      it('reads `length` bytes from an offset, up to the end at most', async () => {
        await driver.putContent('/r/file', content);
        assert.equal((await readAll(await driver.reader('/r/file', 3, 5))).toString(), '34567');
        assert.equal((await readAll(await driver.reader('/r/file', 0, 1))).toString(), '0');
        assert.equal((await readAll(await driver.reader('/r/file', 12, 100))).toString(), 'cdef');
        assert.equal((await readAll(await driver.reader('/r/file', 5, 0))).length, 0);
        assert.equal((await readAll(await driver.reader('/r/file', content.length, 4))).length, 0);
        await assert.rejects(driver.reader('/r/file', content.length + 1, 0), InvalidOffsetError);
        await notFound(driver.reader('/r/missing', 0, 0));
      });

      it('pipes ranges of a large file into a slow destination byte for byte', async () => {
        // several read chunks, written with a pause before each write completes: a reader that
        // reused a buffer before its write finished would hand the destination changed bytes
        const big = randomBytes(3 * MiB + 12_345);
        const w = await driver.writer('/r/big', false);
        await w.write(big);
        await w.commit();
        for (const [offset, length] of [[0, undefined], [1, big.length - 2], [MiB - 7, MiB + 14], [big.length - 3, 3]] as const) {
          const got = await pipeSlowly(await driver.reader('/r/big', offset, length));
          const want = big.subarray(offset, length === undefined ? undefined : offset + length);
          assert.equal(got.length, want.length, `offset ${offset} length ${length}`);
          assert.ok(got.equals(want), `offset ${offset} length ${length}: bytes differ`);
        }
      });
    });

    describe('writer', () => {
      it('writes a list of chunks in order, empty ones included', async () => {
        const w = await driver.writer('/w/chunks', false);
        await w.write([Buffer.from('ab'), Buffer.alloc(0), Buffer.from('cde')]);
        assert.equal(w.size, 5);
        await w.write([]);
        await w.write([Buffer.from('f')]);
        assert.equal(w.size, 6);
        await w.commit();
        assert.equal((await driver.getContent('/w/chunks')).toString(), 'abcdef');
      });

      it('appends across writers: write, close, reopen with append, continue, commit', async () => {
        const first = await driver.writer('/w/upload', false);
        assert.equal(first.size, 0);
        await first.write(Buffer.from('abc'));
        assert.equal(first.size, 3);
        await first.write(Buffer.from('defg'));
        assert.equal(first.size, 7);
        await first.close();
        assert.equal((await driver.stat('/w/upload')).size, 7);

        const second = await driver.writer('/w/upload', true);
        assert.equal(second.size, 7);
        await second.write(Buffer.from('hij'));
        assert.equal(second.size, 10);
        await second.close();

        const third = await driver.writer('/w/upload', true);
        assert.equal(third.size, 10);
        await third.write(Buffer.from('k'));
        await third.commit();
        assert.equal((await driver.getContent('/w/upload')).toString(), 'abcdefghijk');
        assert.equal((await driver.stat('/w/upload')).size, 11);
      });

      it('makes committed content readable', async () => {
        const w = await driver.writer('/w/committed', false);
        await w.write(Buffer.from('hello '));
        await w.write(Buffer.from('world'));
        await w.commit();
        assert.equal((await readAll(await driver.reader('/w/committed'))).toString(), 'hello world');
        assert.equal((await driver.getContent('/w/committed')).toString(), 'hello world');
      });

      it('creates the file when appending to a missing path; an empty commit leaves an empty file', async () => {
        const w = await driver.writer('/w/fresh-append', true);
        assert.equal(w.size, 0);
        await w.commit();
        assert.equal((await driver.stat('/w/fresh-append')).size, 0);
        assert.equal((await driver.getContent('/w/fresh-append')).length, 0);
      });

      it('truncates an existing file when append is false', async () => {
        await driver.putContent('/w/existing', Buffer.from('old and long content'));
        const w = await driver.writer('/w/existing', false);
        assert.equal(w.size, 0);
        await w.write(Buffer.from('new'));
        await w.commit();
        assert.equal((await driver.getContent('/w/existing')).toString(), 'new');
      });

      it('cancel removes the file, also one that was appended to', async () => {
        const w = await driver.writer('/w/cancelled', false);
        await w.write(Buffer.from('doomed'));
        await w.cancel();
        await notFound(driver.stat('/w/cancelled'));

        await driver.putContent('/w/appended', Buffer.from('earlier'));
        const a = await driver.writer('/w/appended', true);
        await a.write(Buffer.from(' and later'));
        await a.cancel();
        await notFound(driver.stat('/w/appended'));
      });

      it('refuses writes after close, commit or cancel', async () => {
        for (const end of ['close', 'commit', 'cancel'] as const) {
          const w = await driver.writer(`/w/ended-${end}`, false);
          await w.write(Buffer.from('x'));
          await w[end]();
          await assert.rejects(w.write(Buffer.from('y')), UnsupportedMethodError);
        }
      });

      it('keeps concurrent writers to different paths apart', async () => {
        const paths = Array.from({ length: 8 }, (_, i) => `/concurrent/${i}/data`);
        const expected = new Map<string, Buffer[]>();
        await Promise.all(
          paths.map(async (path) => {
            const w = await driver.writer(path, false);
            const chunks: Buffer[] = [];
            for (let i = 0; i < 16; i++) {
              const chunk = randomBytes(64 * 1024);
              chunks.push(chunk);
              await w.write(chunk);
            }
            await w.commit();
            expected.set(path, chunks);
          }),
        );
        for (const path of paths) assert.ok((await driver.getContent(path)).equals(Buffer.concat(expected.get(path)!)));
      });

      const large = `streams a ${mib(largeFileBytes)} MiB file in 1 MiB chunks with flat memory`;
      it(large, { timeout: 10 * 60_000 }, async (t) => {
        // One buffer is refilled for every chunk: once write() resolves the driver must not need it.
        const buffer = Buffer.alloc(MiB);
        const written = createHash('sha256');
        const w = await driver.writer('/large/data', false);
        const reachableBefore = reachableBytes();
        const rssBefore = process.memoryUsage.rss();
        let [reachablePeak, rssPeak] = [reachableBefore, rssBefore];
        let writeMs = 0;
        for (let done = 0; done < largeFileBytes; ) {
          const chunk = buffer.subarray(0, Math.min(MiB, largeFileBytes - done));
          randomFillSync(chunk);
          written.update(chunk);
          const start = performance.now();
          await w.write(chunk);
          writeMs += performance.now() - start;
          done += chunk.length;
          assert.equal(w.size, done);
          rssPeak = Math.max(rssPeak, process.memoryUsage.rss());
          if (done % (8 * MiB) === 0) reachablePeak = Math.max(reachablePeak, reachableBytes());
        }
        const commitStart = performance.now();
        await w.commit();
        writeMs += performance.now() - commitStart;
        const rssGrowth = rssPeak - rssBefore;
        const reachableGrowth = reachablePeak - reachableBefore;

        const read = createHash('sha256');
        const readStart = performance.now();
        for await (const chunk of await driver.reader('/large/data')) read.update(chunk as Buffer);
        const readMs = performance.now() - readStart;

        t.diagnostic(
          `${name}: wrote ${mib(largeFileBytes)} MiB in ${writeMs.toFixed(0)} ms (growth: RSS ${mib(rssGrowth)} MiB, ` +
            `reachable ${mib(reachableGrowth)} MiB), read back in ${readMs.toFixed(0)} ms`,
        );
        assert.equal(read.digest('hex'), written.digest('hex'));
        assert.equal((await driver.stat('/large/data')).size, largeFileBytes);
        if (maxGrowth !== null) {
          assert.ok(rssGrowth < maxGrowth, `RSS grew by ${mib(rssGrowth)} MiB, limit ${mib(maxGrowth)} MiB`);
          assert.ok(reachableGrowth < maxGrowth, `reachable memory grew by ${mib(reachableGrowth)} MiB`);
        }
      });
    });

    describe('stat', () => {
      it('describes files, directories and the root', async () => {
        await driver.putContent('/s/dir/file', Buffer.from('12345'));
        const file = await driver.stat('/s/dir/file');
        assert.deepEqual([file.path, file.size, file.isDir], ['/s/dir/file', 5, false]);
        assert.ok(file.modTime instanceof Date && !Number.isNaN(file.modTime.getTime()));

        for (const path of ['/s', '/s/dir', '/']) {
          const dir = await driver.stat(path);
          assert.equal(dir.path, path);
          assert.equal(dir.isDir, true);
          assert.equal(dir.size, 0);
        }
      });

      it('reports missing paths as PathNotFoundError', async () => {
        await driver.putContent('/s/file', Buffer.from('x'));
        await notFound(driver.stat('/s/missing'));
        await notFound(driver.stat('/nothing/here'));
        await notFound(driver.stat('/s/file/below'));
      });
    });

    describe('list', () => {
      it('lists the direct children, sorted, as full paths', async () => {
        await putAll({ '/l/b': '', '/l/a-b': '', '/l/a': '', '/l/c/d/e': '', '/l/B': '', '/m': '' });
        assert.deepEqual(await driver.list('/l'), ['/l/B', '/l/a', '/l/a-b', '/l/b', '/l/c']);
        assert.deepEqual(await driver.list('/l/c'), ['/l/c/d']);
        assert.deepEqual(await driver.list('/'), ['/l', '/m']);
      });

      it('lists an empty root as empty', async () => {
        assert.deepEqual(await driver.list('/'), []);
      });

      it('reports a missing directory as PathNotFoundError', async () => {
        await driver.putContent('/l/file', Buffer.from('x'));
        await notFound(driver.list('/missing'));
        await notFound(driver.list('/l/missing'));
      });
    });

    describe('listNames', () => {
      it('lists the names of the direct children, sorted by code unit, as list does', async () => {
        await putAll({ '/l/b': '', '/l/a-b': '', '/l/a': '', '/l/c/d/e': '', '/l/B': '', '/l/_x': '', '/l/1.0': '', '/m': '' });
        assert.deepEqual(await driver.listNames('/l'), ['1.0', 'B', '_x', 'a', 'a-b', 'b', 'c']);
        assert.deepEqual(await driver.listNames('/l/c'), ['d']);
        assert.deepEqual(await driver.listNames('/'), ['l', 'm']);
        for (const dir of ['/l', '/l/c', '/']) {
          const paths = await driver.list(dir);
          assert.deepEqual(await driver.listNames(dir), paths.map((p) => p.slice(p.lastIndexOf('/') + 1)));
        }
      });

      it('lists an empty root as empty', async () => {
        assert.deepEqual(await driver.listNames('/'), []);
      });

      it('reports a missing directory, or a file, as PathNotFoundError', async () => {
        await driver.putContent('/l/file', Buffer.from('x'));
        await notFound(driver.listNames('/missing'));
        await notFound(driver.listNames('/l/missing'));
        await notFound(driver.listNames('/l/file'));
      });
    });

    describe('childrenVersion', () => {
      /** the token once the driver vouches for `dir` (after the settle time), undefined for drivers that never do */
      async function settled(dir: string): Promise<string | undefined> {
        if (versions === 'never') {
          assert.equal(await driver.childrenVersion(dir), undefined);
          return undefined;
        }
        if (versions.settleMs > 0) await new Promise((r) => setTimeout(r, versions.settleMs + 20));
        const token = await driver.childrenVersion(dir);
        assert.equal(typeof token, 'string', `a token for ${dir} ${versions.settleMs} ms after its last change`);
        return token;
      }

      it('stays the same while nothing changes', async () => {
        await putAll({ '/v/a': '', '/v/d/x': '' });
        const token = await settled('/v');
        if (token === undefined) return;
        assert.equal(await driver.childrenVersion('/v'), token);
        await driver.getContent('/v/a');
        await driver.listNames('/v');
        assert.equal(await driver.childrenVersion('/v'), token);
        assert.equal(await driver.childrenVersion('/'), await driver.childrenVersion('/'));
      });

      it('changes when a child is added, right after the token was handed out', async () => {
        await putAll({ '/v/a': '' });
        const token = await settled('/v');
        if (token === undefined) return;
        await driver.putContent('/v/b', Buffer.from(''));
        assert.notEqual(await driver.childrenVersion('/v'), token);
        assert.deepEqual(await driver.listNames('/v'), ['a', 'b']);
      });

      it('changes when a child directory appears through a write below it', async () => {
        await putAll({ '/v/a': '' });
        const token = await settled('/v');
        if (token === undefined) return;
        const w = await driver.writer('/v/d/e/data', false);
        await w.write(Buffer.from('x'));
        await w.commit();
        assert.notEqual(await driver.childrenVersion('/v'), token);
      });

      it('changes when a file in it is rewritten by putContent, even with content of the same length', async () => {
        await putAll({ '/v/link': 'sha256:aaaa' });
        const token = await settled('/v');
        if (token === undefined) return;
        await driver.putContent('/v/link', Buffer.from('sha256:bbbb'));
        assert.notEqual(await driver.childrenVersion('/v'), token);
      });

      it('changes when a child file or directory is removed', async () => {
        await putAll({ '/v/a': '', '/v/d/x': '', '/v/e': '' });
        let token = await settled('/v');
        if (token === undefined) return;
        await driver.delete('/v/a');
        assert.notEqual(await driver.childrenVersion('/v'), token);
        token = await settled('/v');
        await driver.delete('/v/d');
        assert.notEqual(await driver.childrenVersion('/v'), token);
        assert.deepEqual(await driver.listNames('/v'), ['e']);
      });

      it('changes when a child is moved in or out', async () => {
        await putAll({ '/v/a': '', '/w/b': '' });
        let token = await settled('/v');
        if (token === undefined) return;
        await driver.move('/w/b', '/v/b');
        assert.notEqual(await driver.childrenVersion('/v'), token);
        token = await settled('/v');
        await driver.move('/v/a', '/w/a');
        assert.notEqual(await driver.childrenVersion('/v'), token);
      });

      it('reports a missing directory, or a file, as PathNotFoundError (drivers that vouch)', async () => {
        await driver.putContent('/l/file', Buffer.from('x'));
        if (versions === 'never') return;
        await notFound(driver.childrenVersion('/missing'));
        await notFound(driver.childrenVersion('/l/file'));
      });
    });

    describe('move', () => {
      it('moves a file, creating the destination directories', async () => {
        await driver.putContent('/mv/src', Buffer.from('moved'));
        await driver.move('/mv/src', '/mv/new/deep/dst');
        assert.equal((await driver.getContent('/mv/new/deep/dst')).toString(), 'moved');
        await notFound(driver.stat('/mv/src'));
      });

      it('replaces an existing destination', async () => {
        await driver.putContent('/mv/src', Buffer.from('new'));
        await driver.putContent('/mv/dst', Buffer.from('old content'));
        await driver.move('/mv/src', '/mv/dst');
        assert.equal((await driver.getContent('/mv/dst')).toString(), 'new');
        await notFound(driver.stat('/mv/src'));
      });

      it('reports a missing source as PathNotFoundError and leaves the destination alone', async () => {
        await driver.putContent('/mv/dst', Buffer.from('kept'));
        await notFound(driver.move('/mv/missing', '/mv/dst'));
        assert.equal((await driver.getContent('/mv/dst')).toString(), 'kept');
        await notFound(driver.move('/mv/missing', '/elsewhere/dst'));
        await notFound(driver.stat('/elsewhere/dst'));
      });
    });

    describe('delete', () => {
      it('deletes a file', async () => {
        await putAll({ '/del/file': 'x', '/del/other': 'y' });
        await driver.delete('/del/file');
        await notFound(driver.stat('/del/file'));
        assert.deepEqual(await driver.list('/del'), ['/del/other']);
      });

      it('deletes a tree', async () => {
        await putAll({ '/del/tree/a': '1', '/del/tree/sub/b': '2', '/del/tree-sibling': '3' });
        await driver.delete('/del/tree');
        for (const path of ['/del/tree', '/del/tree/a', '/del/tree/sub/b']) await notFound(driver.stat(path));
        assert.equal((await driver.getContent('/del/tree-sibling')).toString(), '3');
      });

      it('reports a missing path as PathNotFoundError', async () => {
        await notFound(driver.delete('/del/missing'));
      });
    });

    describe('walk', () => {
      const files = { '/w/a/1': '1', '/w/a/2': 'two', '/w/a-b': 'ab', '/w/b/x/y': 'y', '/w/c': 'c', '/other/z': 'z' };
      // By path component: '/w/a/2' before '/w/a-b' although '-' < '/' (as Distribution's catalog orders).
      const all = ['/w/a', '/w/a/1', '/w/a/2', '/w/a-b', '/w/b', '/w/b/x', '/w/b/x/y', '/w/c'];

      async function visit(from: string, control?: (info: FileInfo) => WalkControl, startAfter?: string) {
        const seen: string[] = [];
        await driver.walk(
          from,
          async (info) => {
            seen.push(info.path);
            return control?.(info);
          },
          startAfter === undefined ? undefined : { startAfter },
        );
        return seen;
      }

      beforeEach(() => putAll(files));

      it('visits every entry depth-first in path order, directories before their contents', async () => {
        assert.deepEqual(await visit('/w'), all);
        assert.deepEqual(await visit('/'), ['/other', '/other/z', '/w', ...all]);
        assert.deepEqual(await visit('/w/b'), ['/w/b/x', '/w/b/x/y']);
      });

      it('passes file sizes and marks directories', async () => {
        const infos = new Map<string, FileInfo>();
        await driver.walk('/w', (info) => {
          infos.set(info.path, info);
        });
        assert.deepEqual(
          [...infos.values()].map((i) => [i.path, i.isDir, i.size]),
          all.map((p) => [p, !(p in files), p in files ? Buffer.byteLength(files[p as keyof typeof files]) : 0]),
        );
      });

      it("does not descend into a directory for which fn returns 'skip'", async () => {
        const skip = new Set(['/w/a', '/w/b/x']);
        assert.deepEqual(await visit('/w', (i) => (skip.has(i.path) ? 'skip' : undefined)), [
          '/w/a',
          '/w/a-b',
          '/w/b',
          '/w/b/x',
          '/w/c',
        ]);
      });

      it("ends the whole walk when fn returns 'stop'", async () => {
        assert.deepEqual(await visit('/w', (i) => (i.path === '/w/a/2' ? 'stop' : undefined)), all.slice(0, 3));
        assert.deepEqual(await visit('/w', (i) => (i.path === '/w/b' ? 'stop' : undefined)), all.slice(0, 5));
      });

      it('visits only entries after startAfter, descending into directories that hold it', async () => {
        const after = (hint: string) => visit('/w', undefined, hint);
        assert.deepEqual(await after('/w/a/1'), ['/w/a/2', '/w/a-b', '/w/b', '/w/b/x', '/w/b/x/y', '/w/c']);
        assert.deepEqual(await after('/w/a'), ['/w/a/1', '/w/a/2', '/w/a-b', '/w/b', '/w/b/x', '/w/b/x/y', '/w/c']);
        assert.deepEqual(await after('/w/a/2'), ['/w/a-b', '/w/b', '/w/b/x', '/w/b/x/y', '/w/c']);
        assert.deepEqual(await after('/w/a-b'), ['/w/b', '/w/b/x', '/w/b/x/y', '/w/c']);
        assert.deepEqual(await after('/w/b/x/y'), ['/w/c']);
        assert.deepEqual(await after('/w/b/q'), ['/w/b/x', '/w/b/x/y', '/w/c']); // a hint that does not exist
        assert.deepEqual(await after('/w/bz'), ['/w/c']);
        assert.deepEqual(await after('/w/0'), all);
        assert.deepEqual(await after('/a'), all);
        assert.deepEqual(await after('/w/c'), []);
        assert.deepEqual(await after('/x'), []);
      });

      it('combines startAfter with skip and stop', async () => {
        const control = (i: FileInfo): WalkControl =>
          i.path === '/w/b' ? 'skip' : i.path === '/w/c' ? 'stop' : undefined;
        assert.deepEqual(await visit('/w', control, '/w/a/2'), ['/w/a-b', '/w/b', '/w/c']);
      });

      it('reports a missing start directory as PathNotFoundError', async () => {
        await notFound(driver.walk('/missing', () => {}));
      });
    });

    describe('path validation', () => {
      // '/..' matches PATH_PATTERN, so it is not among these
      const invalid = ['', 'a', 'a/b', '/a//b', '/a/', '//', '/a b', '/a/b c', '/ä', '/a\\b', '/a:b'];
      const data = Buffer.from('x');
      const req = { method: 'GET' } as const;
      const fileMethods: Record<string, (p: string) => Promise<unknown>> = {
        getContent: (p) => driver.getContent(p),
        putContent: (p) => driver.putContent(p, data),
        reader: (p) => driver.reader(p),
        writer: (p) => driver.writer(p, false),
        appendWriter: (p) => driver.writer(p, true),
        'move (src)': (p) => driver.move(p, '/valid/dst'),
        'move (dst)': (p) => driver.move('/valid/src', p),
        delete: (p) => driver.delete(p),
        redirectURL: (p) => driver.redirectURL(req, p),
      };
      const dirMethods: Record<string, (p: string) => Promise<unknown>> = {
        stat: (p) => driver.stat(p),
        list: (p) => driver.list(p),
        listNames: (p) => driver.listNames(p),
        childrenVersion: (p) => driver.childrenVersion(p),
        walk: (p) => driver.walk(p, () => {}),
      };

      it('rejects invalid paths with InvalidPathError in every method', async () => {
        await driver.putContent('/valid/src', data);
        for (const [method, call] of Object.entries({ ...fileMethods, ...dirMethods })) {
          for (const path of invalid) {
            await assert.rejects(call(path), InvalidPathError, `${method}(${JSON.stringify(path)})`);
          }
        }
        assert.equal((await driver.getContent('/valid/src')).toString(), 'x');
      });

      it("rejects the root '/' where a file is meant", async () => {
        for (const [method, call] of Object.entries(fileMethods)) {
          await assert.rejects(call('/'), InvalidPathError, `${method}('/')`);
        }
      });
    });
  });
}
