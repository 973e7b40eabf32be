import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { InvalidPathError } from '../../src/storage/driver.js';
import { FilesystemDriver } from '../../src/storage/filesystem.js';
import { runDriverSuite } from './driver-suite.js';

async function tempRoot(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'berth-fs-'));
}

// childrenVersion's margin cut to 50 ms (from 2 s) so its tests wait little; still far above the
// timestamp granularity of the filesystems tests run on
const SUITE_SETTLE_MS = 50;

runDriverSuite(
  'filesystem',
  async () => {
    const root = await tempRoot();
    const cleanup = () => rm(root, { recursive: true, force: true });
    return { driver: new FilesystemDriver({ rootdirectory: root, settleMs: SUITE_SETTLE_MS }), cleanup };
  },
  { childrenVersion: { settleMs: SUITE_SETTLE_MS } },
);

describe('filesystem driver on disk', () => {
  let root: string;
  let driver: FilesystemDriver;

  beforeEach(async () => {
    root = await tempRoot();
    driver = new FilesystemDriver({ rootdirectory: root });
  });
  afterEach(() => rm(root, { recursive: true, force: true }));

  it('stores driver path /a/b at <root>/a/b, as Distribution does', async () => {
    await driver.putContent('/docker/registry/v2/repositories/lib/x/link', Buffer.from('sha256:00'));
    const w = await driver.writer('/docker/registry/v2/blobs/data', false);
    await w.write(Buffer.from('blob'));
    await w.commit();
    assert.equal(await readFile(join(root, 'docker/registry/v2/repositories/lib/x/link'), 'utf8'), 'sha256:00');
    assert.equal(await readFile(join(root, 'docker/registry/v2/blobs/data'), 'utf8'), 'blob');
  });

  it('reads files written by others below the root', async () => {
    await mkdir(join(root, 'x/y'), { recursive: true });
    await writeFile(join(root, 'x/y/z'), 'from outside');
    assert.equal((await driver.getContent('/x/y/z')).toString(), 'from outside');
    assert.deepEqual(await driver.list('/x'), ['/x/y']);
  });

  it('resumes an appending writer after a restart (new driver instance on the same root)', async () => {
    const w = await driver.writer('/uploads/u1/data', false);
    await w.write(Buffer.from('first half, '));
    await w.close();

    const restarted = new FilesystemDriver({ rootdirectory: root });
    const resumed = await restarted.writer('/uploads/u1/data', true);
    assert.equal(resumed.size, 12);
    await resumed.write(Buffer.from('second half'));
    assert.equal(resumed.size, 23);
    await resumed.commit();
    assert.equal((await restarted.getContent('/uploads/u1/data')).toString(), 'first half, second half');
  });

  it('leaves no temp files behind after putContent', async () => {
    await Promise.all(Array.from({ length: 20 }, (_, i) => driver.putContent('/small/file', Buffer.from(`v${i}`))));
    assert.deepEqual(await readdir(join(root, 'small')), ['file']);
  });

  it('hides temp files of an interrupted putContent from list and walk', async () => {
    await driver.putContent('/d/file', Buffer.from('x'));
    await writeFile(join(root, 'd/.file.0123456789abcdef.tmp'), 'half');
    assert.deepEqual(await driver.list('/d'), ['/d/file']);
    assert.deepEqual(await driver.listNames('/d'), ['file']);
    const seen: string[] = [];
    await driver.walk('/d', (info) => {
      seen.push(info.path);
    });
    assert.deepEqual(seen, ['/d/file']);
  });

  it('does not touch directories that lie before the startAfter hint', async () => {
    // a symlink loop fails every stat or readdir, so the walk must never look at it
    await driver.putContent('/repos/b/file', Buffer.from('x'));
    await mkdir(join(root, 'repos/a'));
    await symlink('loop', join(root, 'repos/a/loop'));
    await symlink('loop', join(root, 'repos/a-loop'));
    await assert.rejects(driver.walk('/repos', () => {}), /ELOOP/);

    const seen: string[] = [];
    await driver.walk('/repos', (info) => void seen.push(info.path), { startAfter: '/repos/a-loop' });
    assert.deepEqual(seen, ['/repos/b', '/repos/b/file']);
  });

  describe('childrenVersion: vouches only for a directory whose last change is older than settleMs', () => {
    const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

    it('by default (2 s), not for a directory changed just now', async () => {
      await driver.putContent('/d/a', Buffer.from('x'));
      assert.equal(await driver.childrenVersion('/d'), undefined);
    });

    it('undefined until settleMs have passed since the last change, then a token; again after a change', async () => {
      const settling = new FilesystemDriver({ rootdirectory: root, settleMs: 200 });
      await settling.putContent('/d/a', Buffer.from('x'));
      assert.equal(await settling.childrenVersion('/d'), undefined);
      await sleep(250);
      const token = await settling.childrenVersion('/d');
      assert.equal(typeof token, 'string');
      await writeFile(join(root, 'd/b'), 'written by another registry');
      assert.equal(await settling.childrenVersion('/d'), undefined);
      await sleep(250);
      const next = await settling.childrenVersion('/d');
      assert.equal(typeof next, 'string');
      assert.notEqual(next, token);
    });

    it('a change in the same timestamp tick as the last one (mtime unchanged) is never hidden', async () => {
      // a coarse clock gives both changes the same mtime: restoring it with utimes does the same here
      const settling = new FilesystemDriver({ rootdirectory: root, settleMs: 200 });
      await settling.putContent('/d/a', Buffer.from('x'));
      const { mtime } = await stat(join(root, 'd'));
      await utimes(join(root, 'd'), mtime, mtime); // whole milliseconds, which utimes can set again below
      const before = await settling.childrenVersion('/d');
      await writeFile(join(root, 'd/b'), 'same tick');
      await utimes(join(root, 'd'), mtime, mtime);
      // no token was handed out while the first change was recent, so none can match now
      assert.equal(before, undefined);
      assert.deepEqual(await settling.listNames('/d'), ['a', 'b']);
    });

    it('an mtime set back into the past does not make a fresh change look old (ctime counts too)', async () => {
      const settling = new FilesystemDriver({ rootdirectory: root, settleMs: 200 });
      await settling.putContent('/d/a', Buffer.from('x'));
      const hourAgo = new Date(Date.now() - 3600_000);
      await utimes(join(root, 'd'), hourAgo, hourAgo);
      assert.equal(await settling.childrenVersion('/d'), undefined);
    });

    it('a directory removed and made again gets a new token', async () => {
      const settling = new FilesystemDriver({ rootdirectory: root, settleMs: 100 });
      await settling.putContent('/d/x/a', Buffer.from('x'));
      await sleep(150);
      const token = await settling.childrenVersion('/d/x');
      assert.equal(typeof token, 'string');
      await settling.delete('/d/x');
      await settling.putContent('/d/x/a', Buffer.from('x'));
      await sleep(150);
      assert.notEqual(await settling.childrenVersion('/d/x'), token);
    });
  });

  it("rejects '.' and '..' segments, which would escape the root", async () => {
    for (const path of ['/..', '/../x', '/a/./b', '/a/..']) {
      await assert.rejects(driver.getContent(path), InvalidPathError);
      await assert.rejects(driver.putContent(path, Buffer.from('x')), InvalidPathError);
    }
    await assert.rejects(driver.list('/..'), InvalidPathError);
  });
});
