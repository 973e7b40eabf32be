// The offline collection's filesystem driver (synchronous reads, its own tree removal): a delete
// never follows a symbolic link out of the tree. (The driver suite's concurrent-readers test cannot
// run on it: a blocking read loop never lets the writer finish.)
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { PathNotFoundError } from '../../src/storage/driver.js';
import { BlockingFilesystemDriver } from '../../src/storage/filesystem-blocking.js';
import { FilesystemDriver } from '../../src/storage/filesystem.js';
import { repositoryNames } from '../../src/registry/gc/repositories.js';

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

describe('blocking filesystem driver: the repository walk', () => {
  it('lists in place, starting no worker thread, and finds what the ordinary driver finds', async () => {
    const root = await mkdtemp(join(tmpdir(), 'berth-fsb-walk-'));
    try {
      const v2 = join(root, 'docker/registry/v2/repositories');
      for (let i = 0; i < 300; i++) await mkdir(join(v2, `team-${i % 3}`, `app-${i}`, '_manifests'), { recursive: true });
      await mkdir(join(v2, 'lone', '_layers'), { recursive: true });
      await writeFile(join(v2, 'team-0', '.berth-tmp-x'), 'not a repository');
      const ordinary = new FilesystemDriver({ rootdirectory: root });
      const expected: string[] = [];
      for await (const name of repositoryNames(ordinary)) expected.push(name);
      await ordinary.close();
      assert.equal(expected.length, 301);

      const threads = () => readdirSync('/proc/self/task').length;
      const before = threads();
      const blocking = new BlockingFilesystemDriver({ rootdirectory: root });
      const found: string[] = [];
      for await (const name of repositoryNames(blocking)) found.push(name);
      // a small-files worker is a thread of this process (and a V8 isolate: some 10 MiB of RSS each)
      assert.ok(threads() <= before, `the walk started threads: ${threads()} against ${before} before it`);
      await blocking.close();
      assert.deepEqual(found, expected);
      const [missing, file] = await blocking.inspectDirectories([{ path: '/nowhere', names: true }, { path: '/docker/registry/v2/repositories/team-0/.berth-tmp-x', names: true }]);
      assert.deepEqual([missing, file], [{ exists: false }, { exists: false }]);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });
});
