/**
 * The filesystem driver's readSmallFiles (src/storage/small-files.ts): files read whole on worker
 * threads, in order, with the time stat() gives; a missing file or a directory is undefined; a
 * bad path is refused as every other call refuses it; the workers do not keep the process alive.
 * Its inspectDirectories, on the same workers: each directory's token as childrenVersion gives it,
 * its names as listNames gives them, the file below each name as stat gives it; a missing
 * directory, a file in its place, a name without the file below are told apart.
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { FilesystemDriver } from '../../src/storage/filesystem.js';
import { StorageError } from '../../src/storage/driver.js';

let root: string;
let driver: FilesystemDriver;

before(async () => {
  root = await mkdtemp(join(tmpdir(), 'berth-small-files-'));
  driver = new FilesystemDriver({ rootdirectory: root });
});
after(async () => {
  await driver.close();
  await rm(root, { recursive: true, force: true });
});

describe('FilesystemDriver.readSmallFiles', () => {
  it('reads many files in order with their times; missing files and directories are undefined', async () => {
    const big = Buffer.alloc(300_000, 7);
    await driver.putContent('/a/link', Buffer.from('sha256:abc'));
    await driver.putContent('/a/empty', Buffer.alloc(0));
    await driver.putContent('/b/big', big);
    const files = await driver.readSmallFiles(['/a/link', '/a/missing', '/a', '/a/empty', '/b/big', '/a/link/below']);
    assert.deepEqual(
      files.map((f) => f?.content.toString('latin1')),
      ['sha256:abc', undefined, undefined, '', big.toString('latin1'), undefined],
    );
    assert.equal(files[0]?.modTimeMs, (await driver.stat('/a/link')).modTime.getTime());
    assert.deepEqual(await driver.readSmallFiles([]), []);
  });

  it('refuses a path outside the root as getContent does', async () => {
    await assert.rejects(driver.readSmallFiles(['/a/../../etc/passwd']), (err: Error) => /invalid|path/i.test(err.message));
  });
});

describe('FilesystemDriver.inspectDirectories', () => {
  /** vouches for a directory changed more than 5 ms ago */
  let vouching: FilesystemDriver;
  before(() => {
    vouching = new FilesystemDriver({ rootdirectory: root, settleMs: 5 });
  });
  after(() => vouching.close());
  const settle = () => new Promise((resolve) => setTimeout(resolve, 20));

  it("tells each directory's token, names and the file below each name as the single calls do", async () => {
    await vouching.putContent('/tags/v1/current/link', Buffer.from('sha256:one'));
    await vouching.putContent('/tags/v2/current/link', Buffer.from('sha256:second'));
    await mkdir(join(root, 'tags/no-link/current'), { recursive: true }); // a tag directory without current/link
    await vouching.putContent('/tags/file-current/current', Buffer.from('a file where a directory belongs'));
    await mkdir(join(root, 'tags/dir-link/current/link'), { recursive: true }); // a directory where the link belongs
    await writeFile(join(root, 'tags/.v3.0123456789abcdef.tmp'), 'a temp file: hidden from listings');
    await vouching.putContent('/file', Buffer.from('not a directory'));
    await settle();
    const [tags, missing, file, versionOnly, namesOnly] = await vouching.inspectDirectories([
      { path: '/tags', version: true, names: true, below: 'current/link' },
      { path: '/nowhere', version: true, names: true, below: 'current/link' },
      { path: '/file', version: true, names: true },
      { path: '/tags/v1', version: true },
      { path: '/file/below', names: true },
    ]);
    const names = await vouching.listNames('/tags');
    assert.deepEqual(names, ['dir-link', 'file-current', 'no-link', 'v1', 'v2']);
    assert.equal(tags.exists, true);
    assert.equal(tags.version, await vouching.childrenVersion('/tags'));
    assert.notEqual(tags.version, undefined);
    assert.deepEqual(tags.names, names);
    const stats = await Promise.all(names.map((n) => vouching.stat(`/tags/${n}/current/link`).catch(() => undefined)));
    assert.deepEqual(
      tags.below,
      stats.map((st) => st && { size: st.size, modTimeMs: st.modTime.getTime() }),
    );
    assert.deepEqual(tags.below?.slice(0, 3), [{ size: 0, modTimeMs: stats[0]!.modTime.getTime() }, undefined, undefined]);
    assert.equal(tags.below?.[4]?.size, 'sha256:second'.length);
    assert.deepEqual(missing, { exists: false });
    assert.deepEqual(file, { exists: false });
    assert.equal(versionOnly.version, await vouching.childrenVersion('/tags/v1'));
    assert.equal(versionOnly.names, undefined);
    assert.deepEqual(namesOnly, { exists: false });
    assert.deepEqual(await vouching.inspectDirectories([]), []);
  });

  it('vouches for no directory changed within its settle time, as childrenVersion', async () => {
    await driver.putContent('/fresh/a', Buffer.from('x'));
    const [fresh] = await driver.inspectDirectories([{ path: '/fresh', version: true, names: true }]);
    assert.equal(await driver.childrenVersion('/fresh'), undefined);
    assert.deepEqual(fresh, { exists: true, names: ['a'] });
  });

  it('fails with the path of a directory it could not read for another reason than its absence', async () => {
    await mkdir(join(root, 'loops'), { recursive: true });
    await symlink(join(root, 'loops/a'), join(root, 'loops/a')); // ELOOP
    await assert.rejects(vouching.inspectDirectories([{ path: '/tags', version: true }, { path: '/loops/a', version: true }]), (err: Error) => err instanceof StorageError && err.message.includes('/loops/a'));
  });

  it('refuses a path or a file below outside the root', async () => {
    await assert.rejects(vouching.inspectDirectories([{ path: '/a/../../etc', names: true }]), (err: Error) => /invalid|path/i.test(err.message));
    await assert.rejects(vouching.inspectDirectories([{ path: '/tags', names: true, below: '../../../etc/passwd' }]), (err: Error) => /invalid|path/i.test(err.message));
  });
});
