/**
 * The repository walk (src/registry/gc/repositories.ts) on the filesystem: a level's directories
 * are listed many at a time through the driver's inspectDirectories (its worker threads), not one
 * listNames each through libuv's pool, and the walk gives what the listings one by one give, in
 * the same order.
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { repositoryNames } from '../../src/registry/gc/repositories.js';
import * as layout from '../../src/registry/layout.js';
import { pathSortKey, type DirectoryFacts, type DirectoryQuery, type StorageDriver } from '../../src/storage/driver.js';
import { FilesystemDriver } from '../../src/storage/filesystem.js';
import { ForwardingDriver } from '../../src/storage/forwarding.js';

const dirs: string[] = [];
after(async () => {
  for (const dir of dirs) await rm(dir, { recursive: true, force: true });
});

class CountingDriver extends FilesystemDriver {
  listings = 0;
  inspections = 0;
  override listNames(path: string): Promise<string[]> {
    this.listings++;
    return super.listNames(path);
  }
  override inspectDirectories(queries: readonly DirectoryQuery[]): Promise<DirectoryFacts[]> {
    this.inspections++;
    return super.inspectDirectories(queries);
  }
}

/** the same filesystem without inspectDirectories: the walk lists one directory at a time */
class OneByOne extends ForwardingDriver {
  override get inspectDirectories(): StorageDriver['inspectDirectories'] {
    return undefined;
  }
}

const collect = async (names: AsyncIterable<string>) => {
  const out: string[] = [];
  for await (const name of names) out.push(name);
  return out;
};

describe('the repository walk', () => {
  it('lists a level of repository directories in a few inspectDirectories calls, in the order and with the names of the one-by-one listings', async () => {
    const root = await mkdtemp(join(tmpdir(), 'berth-walk-'));
    dirs.push(root);
    const expected: string[] = [];
    for (let n = 0; n < 3; n++) for (let r = 0; r < 300; r++) expected.push(`team-${n}/app-${r}`);
    // nested below a repository, names that sort around '/', a repository of `_layers` links only
    expected.push('solo', 'team-1/app-5/nested', 'team-1/app-5-b', 'layers-only');
    for (const name of expected) {
      const dir = name === 'layers-only' ? `${layout.repository(name)}/_layers/sha256` : `${layout.manifestsDir(name)}/tags`;
      await mkdir(join(root, dir), { recursive: true });
    }
    // not repositories: only uploads, and a stray file
    await mkdir(join(root, layout.repository('uploads-only'), '_uploads', 'x'), { recursive: true });
    await writeFile(join(root, layout.REPOSITORIES, 'stray-file'), 'x');
    const driver = new CountingDriver({ rootdirectory: root });
    try {
      const walked = await collect(repositoryNames(driver));
      assert.deepEqual(walked, [...expected].sort((a, b) => (pathSortKey(a) < pathSortKey(b) ? -1 : 1)));
      assert.deepEqual(await collect(repositoryNames(new OneByOne(driver))), walked);
      assert.deepEqual(await collect(repositoryNames(driver, 'team-1')), walked.filter((name) => name.startsWith('team-1/')));
      // before: one listNames per directory (909 here)
      const first = new CountingDriver({ rootdirectory: root });
      await collect(repositoryNames(first));
      await first.close();
      assert.equal(first.listings, 0);
      // repositories/, its 7 names in one call, the 300 apps of each team in 2 calls of 256, the one nested directory
      assert.ok(first.inspections <= 1 + 1 + 3 * 2 + 1, `inspectDirectories calls: ${first.inspections}`);
    } finally {
      await driver.close();
    }
  });
});
