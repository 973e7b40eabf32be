/**
 * The filesystem driver's readSmallFiles (src/storage/small-files.ts): files read whole on worker
 * threads, in order, with the time stat() gives; a missing file or a directory is undefined; a
 * bad path is refused as every other call refuses it; the workers do not keep the process alive.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { FilesystemDriver } from '../../src/storage/filesystem.js';

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
