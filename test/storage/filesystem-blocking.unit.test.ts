// The offline collection's filesystem driver (synchronous reads, its own tree removal): a delete
// never follows a symbolic link out of the tree. (The driver suite's concurrent-readers test cannot
// run on it: a blocking read loop never lets the writer finish.)
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { PathNotFoundError } from '../../src/storage/driver.js';
import { BlockingFilesystemDriver } from '../../src/storage/filesystem-blocking.js';

describe('blocking filesystem driver: delete', () => {
  it('removes a nested tree, a symbolic link itself (never what it points at), and a missing path is PathNotFoundError', async () => {
    const root = await mkdtemp(join(tmpdir(), 'berth-fsb-'));
    const outside = await mkdtemp(join(tmpdir(), 'berth-fsb-outside-'));
    try {
      await writeFile(join(outside, 'keep'), 'x');
      const driver = new BlockingFilesystemDriver({ rootdirectory: root });
      await mkdir(join(root, 'a/b/c'), { recursive: true });
      await writeFile(join(root, 'a/b/c/link'), 'l');
      await writeFile(join(root, 'a/b/berth.json'), '{}');
      await symlink(outside, join(root, 'a/b/out'));
      await symlink(outside, join(root, 'top'));
      await driver.delete('/top');
      assert.deepEqual(await readdir(outside), ['keep']);
      await driver.delete('/a/b');
      assert.deepEqual(await readdir(join(root, 'a')), []);
      assert.deepEqual(await readdir(outside), ['keep'], 'the link inside the tree went, not its target');
      await assert.rejects(driver.delete('/a/b'), PathNotFoundError);
    } finally {
      await rm(root, { recursive: true, force: true });
      await rm(outside, { recursive: true, force: true });
    }
  });
});
