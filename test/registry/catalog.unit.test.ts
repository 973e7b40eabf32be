import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, before, beforeEach, describe, it } from 'node:test';
import { Catalog } from '../../src/registry/catalog.js';
import type { Digest } from '../../src/registry/digest.js';
import { pathSortKey, type StorageDriver } from '../../src/storage/driver.js';
import { FilesystemDriver } from '../../src/storage/filesystem.js';
import { InMemoryDriver } from '../../src/storage/inmemory.js';
import * as layout from '../../src/registry/layout.js';
import { linkContent } from '../../src/registry/links.js';

const DIGEST = `sha256:${'cd'.repeat(32)}` as Digest;

/** a repository as a manifest push leaves it: a revision link (and a tag) */
async function repo(driver: StorageDriver, name: string): Promise<void> {
  await driver.putContent(layout.manifestRevisionLink(name, DIGEST), linkContent(DIGEST));
  await driver.putContent(layout.tagCurrentLink(name, 'latest'), linkContent(DIGEST));
}

/** component-wise order, as the catalog promises ('a/b' before 'a-b') */
function componentOrder(names: string[]): string[] {
  return [...names].sort((a, b) => (pathSortKey(a) < pathSortKey(b) ? -1 : pathSortKey(a) > pathSortKey(b) ? 1 : 0));
}

/** every page from the start, following `last` as a client follows Link */
async function allPages(catalog: Catalog, n: number): Promise<{ names: string[]; pages: number }> {
  const names: string[] = [];
  let last: string | undefined;
  let pages = 0;
  for (;;) {
    const page = await catalog.page({ n, last });
    pages++;
    assert.ok(page.repositories.length <= n);
    names.push(...page.repositories);
    if (!page.more) return { names, pages };
    assert.equal(page.repositories.length, n, 'a page followed by more is full');
    last = page.repositories[page.repositories.length - 1];
  }
}

const drivers: [string, () => Promise<{ driver: StorageDriver; cleanup(): Promise<void> }>][] = [
  ['inmemory', async () => ({ driver: new InMemoryDriver(), cleanup: async () => undefined })],
  [
    'filesystem',
    async () => {
      const root = await mkdtemp(join(tmpdir(), 'berth-catalog-'));
      return { driver: new FilesystemDriver({ rootdirectory: root }), cleanup: () => rm(root, { recursive: true, force: true }) };
    },
  ],
];

for (const [driverName, make] of drivers) {
  describe(`Catalog (${driverName})`, () => {
    let driver: StorageDriver;
    let cleanup: () => Promise<void>;
    let catalog: Catalog;
    beforeEach(async () => {
      ({ driver, cleanup } = await make());
      catalog = new Catalog(driver);
    });
    afterEach(() => cleanup());

    it('an empty registry (no repositories directory) has an empty catalog', async () => {
      assert.deepEqual(await catalog.page({ n: 10 }), { repositories: [], more: false });
      assert.deepEqual(await catalog.page({ n: 10, last: 'x' }), { repositories: [], more: false });
    });

    const NESTED = ['b', 'a/b/c', 'a.b', 'a-b', 'a/b', 'a', 'a/0z', 'a0', 'a/b/c/d'];
    const NESTED_ORDER = ['a', 'a/0z', 'a/b', 'a/b/c', 'a/b/c/d', 'a-b', 'a.b', 'a0', 'b'];

    it('lists nested repositories component-wise, each before those inside it', async () => {
      for (const name of NESTED) await repo(driver, name);
      assert.deepEqual(NESTED_ORDER, componentOrder(NESTED));
      assert.deepEqual(await catalog.page({ n: 100 }), { repositories: NESTED_ORDER, more: false });
    });

    it('pages through nested repositories with every page size, each exactly once', async () => {
      for (const name of NESTED) await repo(driver, name);
      for (let n = 1; n <= NESTED.length + 1; n++) {
        const { names, pages } = await allPages(catalog, n);
        assert.deepEqual(names, NESTED_ORDER, `n=${n}`);
        assert.equal(pages, Math.max(1, Math.ceil(NESTED.length / n)), `n=${n}`);
      }
    });

    it('last positions after the given name, existing or not', async () => {
      for (const name of NESTED) await repo(driver, name);
      const after = async (last: string, n = 3) => (await catalog.page({ n, last })).repositories;
      assert.deepEqual(await after('a/b'), ['a/b/c', 'a/b/c/d', 'a-b']); // in the middle
      assert.deepEqual(await after('a'), ['a/0z', 'a/b', 'a/b/c']); // a repository with nested ones
      assert.deepEqual(await after('0'), ['a', 'a/0z', 'a/b']); // before the first
      assert.deepEqual(await after('0', 100), NESTED_ORDER);
      assert.deepEqual(await after('b'), []); // the final one
      assert.deepEqual(await after('zzz'), []); // after the end
      assert.deepEqual(await after('a/a'), ['a/b', 'a/b/c', 'a/b/c/d']); // not a repository, inside one
      assert.deepEqual(await after('a/bz'), ['a-b', 'a.b', 'a0']); // not a repository, after a subtree
      assert.deepEqual(await after('a/b/'), ['a/b/c', 'a/b/c/d', 'a-b']); // a trailing slash
      assert.deepEqual(await after('a,'), ['a-b', 'a.b', 'a0']); // ',' sorts between '/' and '-'
      assert.deepEqual(await catalog.page({ n: 2, last: 'a-b' }), { repositories: ['a.b', 'a0'], more: true });
      assert.deepEqual(await catalog.page({ n: 3, last: 'a-b' }), { repositories: ['a.b', 'a0', 'b'], more: false });
    });

    it('n limits the page; more tells whether others follow', async () => {
      for (const name of ['x', 'y', 'z']) await repo(driver, name);
      assert.deepEqual(await catalog.page({ n: 2 }), { repositories: ['x', 'y'], more: true });
      assert.deepEqual(await catalog.page({ n: 3 }), { repositories: ['x', 'y', 'z'], more: false });
      assert.deepEqual(await catalog.page({ n: 1, last: 'y' }), { repositories: ['z'], more: false });
      assert.deepEqual(await catalog.page({ n: 0 }), { repositories: [], more: true });
      assert.deepEqual(await catalog.page({ n: 0, last: 'z' }), { repositories: [], more: false });
    });

    it('does not list directories without _manifests: blobs only, uploads only, intermediate directories', async () => {
      await repo(driver, 'lib/app');
      await driver.putContent(layout.layerLink('blobonly', DIGEST), linkContent(DIGEST));
      await driver.putContent(layout.layerLink('lib/blobonly', DIGEST), linkContent(DIGEST));
      await driver.putContent(layout.uploadStartedAt('uploading', 'u1'), Buffer.from('2024-01-01T00:00:00Z'));
      assert.deepEqual(await catalog.page({ n: 100 }), { repositories: ['lib/app'], more: false });
    });

    it('lists a repository with manifests but no tags, and one with only mounted layers', async () => {
      await driver.putContent(layout.manifestRevisionLink('bydigest', DIGEST), linkContent(DIGEST));
      await driver.putContent(layout.tagCurrentLink('mounted', 'v1'), linkContent(DIGEST));
      assert.deepEqual((await catalog.page({ n: 100 })).repositories, ['bydigest', 'mounted']);
    });

    it('never descends into _ directories (_uploads, _layers, _manifests)', async () => {
      await repo(driver, 'lib/app');
      await driver.putContent(layout.layerLink('lib/app', DIGEST), linkContent(DIGEST));
      // a directory below _uploads that looks like a repository must not be found, nor listed
      await driver.putContent(`${layout.uploadsDir('lib/app')}/fake/_manifests/revisions/sha256/${'cd'.repeat(32)}/link`, Buffer.from(DIGEST));
      await driver.putContent(`${layout.REPOSITORIES}/_hidden/_manifests/tags/x/current/link`, Buffer.from(DIGEST));
      const listed: string[] = [];
      const spy = new Proxy(driver, {
        get(target, prop, receiver) {
          if (prop === 'listNames') {
            return (path: string) => (listed.push(path.slice(layout.REPOSITORIES.length + 1)), target.listNames(path));
          }
          const value = Reflect.get(target, prop, receiver);
          return typeof value === 'function' ? value.bind(target) : value;
        },
      });
      assert.deepEqual(await new Catalog(spy).page({ n: 100 }), { repositories: ['lib/app'], more: false });
      assert.deepEqual(listed, ['', 'lib', 'lib/app']);
    });
  });
}

describe('Catalog at scale: 100,000 repositories in memory', () => {
  const TOTAL = 100_000;
  const driver = new InMemoryDriver();
  const names: string[] = [];
  /** versions: childrenVersion, taken for the big directories only (the top, the teams) */
  const calls = { listNames: 0, versions: 0, other: 0 };
  const counted = new Proxy(driver, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        if (prop === 'listNames') calls.listNames++;
        else if (prop === 'childrenVersion') calls.versions++;
        else calls.other++;
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  const catalog = new Catalog(counted);
  const reset = () => Object.assign(calls, { listNames: 0, versions: 0, other: 0 });

  before(async () => {
    // 100 teams of 999 repositories, 100 top-level ones, and 'team-NN' itself a repository for every tenth team
    for (let t = 0; t < 100; t++) {
      const team = `team-${String(t).padStart(2, '0')}`;
      names.push(`solo-${String(t).padStart(2, '0')}`);
      if (t % 10 === 0) names.push(team);
      for (let r = 0; names.length < ((t + 1) * TOTAL) / 100; r++) names.push(`${team}/app-${String(r).padStart(4, '0')}`);
    }
    assert.equal(names.length, TOTAL);
    const digest = DIGEST;
    for (const name of names) await driver.putContent(layout.manifestRevisionLink(name, digest), linkContent(digest));
    names.splice(0, names.length, ...componentOrder(names));
  });

  it('paging the whole catalog with n=1000 visits every repository once, in order', async () => {
    reset();
    const { names: listed, pages } = await allPages(catalog, 1000);
    assert.equal(pages, TOTAL / 1000);
    assert.equal(listed.length, TOTAL);
    assert.equal(new Set(listed).size, TOTAL);
    assert.deepEqual(listed, names);
    // one listing per repository directory over all pages, plus the top and team directories of each page
    console.log(`# whole catalog, ${pages} pages: ${calls.listNames} listings (${(calls.listNames / TOTAL).toFixed(3)} per repository)`);
    assert.ok(calls.listNames < 1.01 * TOTAL, `listings ${calls.listNames}`);
    // directories listed again take a token: per page the top, the team directory of `last`,
    // `last` itself and the repository after it (the previous page listed it to tell `more`)
    assert.ok(calls.versions <= 4 * pages, `tokens ${calls.versions}`);
    assert.equal(calls.other, 0);
  });

  it('a directory listed again that has not changed is not read again: its token suffices', async () => {
    const last = 'team-05/app-0100';
    await catalog.page({ n: 10, last });
    await catalog.page({ n: 10, last }); // listed a second time: from now on cached under their tokens
    reset();
    const page = await catalog.page({ n: 10, last });
    assert.deepEqual(page.repositories, names.slice(names.indexOf(last) + 1, names.indexOf(last) + 11));
    // the top, team-05 (999 names), `last` itself (for names nested in it) and the eleven
    // repositories after it (the 11th tells `more`): a token each, no listing
    assert.deepEqual({ ...calls }, { listNames: 0, versions: 14, other: 0 });
    await driver.putContent(layout.manifestRevisionLink('team-05/app-0100a', DIGEST), linkContent(DIGEST));
    try {
      assert.deepEqual((await catalog.page({ n: 1, last })).repositories, ['team-05/app-0100a'], 'a repository added since is listed at once');
    } finally {
      await driver.delete(layout.repository('team-05/app-0100a'));
    }
    assert.deepEqual((await catalog.page({ n: 1, last })).repositories, ['team-05/app-0101'], 'and gone at once');
  });

  it('one page with last near the end reads only about that page, not the whole tree', async () => {
    reset();
    const last = names[TOTAL - 1500];
    const page = await catalog.page({ n: 1000, last });
    assert.deepEqual(page.repositories, names.slice(TOTAL - 1499, TOTAL - 499));
    assert.equal(page.more, true);
    console.log(`# one page after ${last}: ${calls.listNames} listings, ${calls.other} other calls`);
    assert.ok(calls.listNames < 1_010, `listings ${calls.listNames}`);
    assert.equal(calls.other, 0);
  });

  it('the final page: more is false, with last on the final repository almost nothing is read', async () => {
    reset();
    const page = await catalog.page({ n: 1000, last: names[TOTAL - 10] });
    assert.deepEqual(page, { repositories: names.slice(TOTAL - 9), more: false });
    assert.ok(calls.listNames < 15, `listings ${calls.listNames}`);
    reset();
    assert.deepEqual(await catalog.page({ n: 1000, last: names[TOTAL - 1] }), { repositories: [], more: false });
    // the top directory, the final repository's team directory, and the final repository (for names inside it)
    assert.ok(calls.listNames <= 3, `listings ${calls.listNames}`);
  });

  it('the first page reads about one page', async () => {
    reset();
    const page = await catalog.page({ n: 10 });
    assert.deepEqual(page, { repositories: names.slice(0, 10), more: true });
    assert.ok(calls.listNames < 15 && calls.other === 0, JSON.stringify(calls));
  });
});
