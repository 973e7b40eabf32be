import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { normalisePrefix } from '../../src/http/options.js';
import { parsePageQuery, nextLink, DEFAULT_TAGS_PAGE } from '../../src/http/pagination.js';
import { pageOf } from '../../src/registry/pages.js';
import type { Digest } from '../../src/registry/digest.js';
import { RegistryError } from '../../src/registry/errors.js';
import { ListingCache } from '../../src/registry/cache/listing-cache.js';
import { TagStore } from '../../src/registry/tags.js';
import type { StorageDriver } from '../../src/storage/driver.js';
import { FilesystemDriver } from '../../src/storage/filesystem.js';
import { InMemoryDriver } from '../../src/storage/inmemory.js';
import * as layout from '../../src/registry/layout.js';
import { linkContent } from '../../src/registry/links.js';

const DIGEST = `sha256:${'ab'.repeat(32)}` as Digest;

async function tag(driver: StorageDriver, name: string, ...tags: string[]): Promise<void> {
  await driver.putContent(layout.manifestRevisionLink(name, DIGEST), linkContent(DIGEST));
  for (const t of tags) {
    await driver.putContent(layout.tagIndexLink(name, t, DIGEST), linkContent(DIGEST));
    await driver.putContent(layout.tagCurrentLink(name, t), linkContent(DIGEST));
  }
}

function isNameUnknown(name: string) {
  return (err: unknown) => {
    assert.ok(err instanceof RegistryError);
    assert.equal(err.code, 'NAME_UNKNOWN');
    assert.deepEqual(err.detail, { name });
    return true;
  };
}

/** childrenVersion's margin for the filesystem driver of these tests (2 s by default) */
const SETTLE_MS = 100;
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

interface Made {
  driver: StorageDriver;
  /** another driver on the same storage: another instance, or Distribution, on the same root */
  other: StorageDriver;
  /** the filesystem root, if any */
  root?: string;
  /** waits until the driver vouches for directories changed before (the filesystem's margin) */
  settle(): Promise<void>;
  cleanup(): Promise<void>;
}

const drivers: [string, () => Promise<Made>][] = [
  [
    'inmemory',
    async () => {
      const driver = new InMemoryDriver();
      return { driver, other: driver, settle: async () => undefined, cleanup: async () => undefined };
    },
  ],
  [
    'filesystem',
    async () => {
      const root = await mkdtemp(join(tmpdir(), 'berth-tags-'));
      return {
        driver: new FilesystemDriver({ rootdirectory: root, settleMs: SETTLE_MS }),
        other: new FilesystemDriver({ rootdirectory: root }),
        root,
        settle: () => sleep(SETTLE_MS + 50),
        cleanup: () => rm(root, { recursive: true, force: true }),
      };
    },
  ],
];

/** the driver, counting its listNames calls */
function countingListings(driver: StorageDriver): { driver: StorageDriver; listings: () => number } {
  let listings = 0;
  const counted = new Proxy(driver, {
    get(target, prop, receiver) {
      const value = Reflect.get(target, prop, receiver);
      if (typeof value !== 'function') return value;
      return (...args: unknown[]) => {
        if (prop === 'listNames' || prop === 'list') listings++;
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
  return { driver: counted, listings: () => listings };
}

for (const [driverName, make] of drivers) {
  describe(`TagStore (${driverName})`, () => {
    let driver: StorageDriver;
    let cleanup: () => Promise<void>;
    let store: TagStore;
    let made: Made;
    beforeEach(async () => {
      made = await make();
      ({ driver, cleanup } = made);
      store = new TagStore(driver);
    });
    afterEach(() => cleanup());

    it('lists tags in code-unit order (upper case before lower, digits first, _ between)', async () => {
      await tag(driver, 'lib/app', 'v2', 'latest', 'V1', '1.0', '_x', 'v10', 'a-b', 'a.b', 'a_b');
      assert.deepEqual(await store.list('lib/app'), ['1.0', 'V1', '_x', 'a-b', 'a.b', 'a_b', 'latest', 'v10', 'v2']);
    });

    it('a repository that was never pushed is NAME_UNKNOWN', async () => {
      await assert.rejects(store.list('nope'), isNameUnknown('nope'));
    });

    it('a repository with only blobs (or an upload) is NAME_UNKNOWN, as in Distribution', async () => {
      await driver.putContent(layout.layerLink('blobs/only', DIGEST), linkContent(DIGEST));
      await driver.putContent(layout.uploadStartedAt('uploading', 'u1'), Buffer.from('2024-01-01T00:00:00Z'));
      await assert.rejects(store.list('blobs/only'), isNameUnknown('blobs/only'));
      await assert.rejects(store.list('uploading'), isNameUnknown('uploading'));
    });

    it('a directory that only holds nested repositories is NAME_UNKNOWN', async () => {
      await tag(driver, 'a/b', 'latest');
      await assert.rejects(store.list('a'), isNameUnknown('a'));
      assert.deepEqual(await store.list('a/b'), ['latest']);
    });

    it('a repository with manifests but no tags lists none', async () => {
      await tag(driver, 'bydigest');
      assert.deepEqual(await store.list('bydigest'), []);
    });

    it('a repository whose tags were all deleted lists none', async () => {
      await tag(driver, 'lib/app', 'a', 'b');
      await driver.delete(layout.tagDir('lib/app', 'a'));
      assert.deepEqual(await store.list('lib/app'), ['b']);
      await driver.delete(layout.tagDir('lib/app', 'b'));
      assert.deepEqual(await store.list('lib/app'), []);
    });

    it('tags of a repository are not mixed with those of nested ones', async () => {
      await tag(driver, 'a', 'one');
      await tag(driver, 'a/b', 'two');
      assert.deepEqual(await store.list('a'), ['one']);
      assert.deepEqual(await store.list('a/b'), ['two']);
    });

    describe('the cache of tag lists', () => {
      let counted: ReturnType<typeof countingListings>;
      let cachedStore: TagStore;
      beforeEach(() => {
        counted = countingListings(driver);
        cachedStore = new TagStore(counted.driver);
      });

      it('lists the tags directory once while it is unchanged, and hands out the same frozen array', async () => {
        await tag(driver, 'lib/app', 'b', 'a', 'c');
        await made.settle();
        const first = await cachedStore.list('lib/app');
        assert.deepEqual(first, ['a', 'b', 'c']);
        assert.ok(Object.isFrozen(first));
        for (let i = 0; i < 5; i++) assert.equal(await cachedStore.list('lib/app'), first);
        assert.equal(counted.listings(), 1);
        assert.deepEqual(cachedStore.cached, { entries: 1, names: 3 });
      });

      it('requests that arrive while the directory is being read share that one listing', async () => {
        await tag(driver, 'lib/app', 'a', 'b');
        await made.settle();
        const lists = await Promise.all(Array.from({ length: 20 }, () => cachedStore.list('lib/app')));
        for (const list of lists) assert.equal(list, lists[0]);
        assert.deepEqual(lists[0], ['a', 'b']);
        assert.equal(counted.listings(), 1);
        // not once the directory changed: the next requests get another token and read again
        await tag(made.other, 'lib/app', 'c');
        await made.settle();
        const after = await Promise.all(Array.from({ length: 5 }, () => cachedStore.list('lib/app')));
        for (const list of after) assert.deepEqual(list, ['a', 'b', 'c']);
        assert.equal(counted.listings(), 2);
      });

      it('tags added and deleted by another instance on the same storage show at once', async () => {
        await tag(driver, 'lib/app', 'a', 'c');
        await made.settle();
        assert.deepEqual(await cachedStore.list('lib/app'), ['a', 'c']);
        assert.deepEqual(await cachedStore.list('lib/app'), ['a', 'c']); // served from the cache
        await tag(made.other, 'lib/app', 'b');
        assert.deepEqual(await cachedStore.list('lib/app'), ['a', 'b', 'c']);
        await made.settle();
        assert.deepEqual(await cachedStore.list('lib/app'), ['a', 'b', 'c']);
        await made.other.delete(layout.tagDir('lib/app', 'a'));
        assert.deepEqual(await cachedStore.list('lib/app'), ['b', 'c']);
        await made.settle();
        assert.deepEqual(await cachedStore.list('lib/app'), ['b', 'c']);
        // read only once the directory has settled again: the new token tells
        await tag(made.other, 'lib/app', 'd');
        await made.settle();
        assert.deepEqual(await cachedStore.list('lib/app'), ['b', 'c', 'd']);
        await made.other.delete(layout.tagDir('lib/app', 'd'));
        await made.settle();
        assert.deepEqual(await cachedStore.list('lib/app'), ['b', 'c']);
        await made.other.delete(layout.tagDir('lib/app', 'b'));
        await made.other.delete(layout.tagDir('lib/app', 'c'));
        assert.deepEqual(await cachedStore.list('lib/app'), []);
      });

      it('re-pointing a tag changes no name: the cached list stays, and right', async () => {
        await tag(driver, 'lib/app', 'a', 'b');
        await made.settle();
        assert.deepEqual(await cachedStore.list('lib/app'), ['a', 'b']);
        const other = `sha256:${'cd'.repeat(32)}` as Digest;
        await made.other.putContent(layout.tagIndexLink('lib/app', 'a', other), linkContent(other));
        await made.other.putContent(layout.tagCurrentLink('lib/app', 'a'), linkContent(other));
        assert.deepEqual(await cachedStore.list('lib/app'), ['a', 'b']);
        assert.equal(counted.listings(), 1);
      });

      it('a repository deleted behind its back is NAME_UNKNOWN, its tags directory removed lists none', async () => {
        await tag(driver, 'gone', 'a');
        await tag(driver, 'untagged', 'a');
        await made.settle();
        assert.deepEqual(await cachedStore.list('gone'), ['a']);
        assert.deepEqual(await cachedStore.list('untagged'), ['a']);
        await made.other.delete(layout.repository('gone'));
        await made.other.delete(layout.tagsDir('untagged'));
        await assert.rejects(cachedStore.list('gone'), isNameUnknown('gone'));
        assert.deepEqual(await cachedStore.list('untagged'), []);
        assert.deepEqual(cachedStore.cached, { entries: 0, names: 0 });
      });

      it('keeps at most maxEntries lists and maxNames names, least recently used out first', async () => {
        const small = new TagStore(counted.driver, { cache: { maxEntries: 2, maxNames: 5 } });
        await tag(driver, 'r1', 'a', 'b');
        await tag(driver, 'r2', 'a', 'b');
        await tag(driver, 'r3', 'a');
        await tag(driver, 'big', 'a', 'b', 'c', 'd', 'e', 'f');
        await made.settle();
        await small.list('r1');
        await small.list('r2');
        await small.list('r1'); // r2 is now the least recently used
        await small.list('r3');
        assert.deepEqual(small.cached, { entries: 2, names: 3 });
        const before = counted.listings();
        await small.list('r1');
        await small.list('r3');
        assert.equal(counted.listings(), before, 'r1 and r3 from the cache');
        await small.list('r2');
        assert.equal(counted.listings(), before + 1, 'r2 was evicted');
        assert.deepEqual(await small.list('big'), ['a', 'b', 'c', 'd', 'e', 'f']);
        assert.deepEqual(small.cached, { entries: 2, names: 3 }, 'a list longer than maxNames is not kept');
      });

      it('a driver that never vouches (as S3): listed on every request, nothing kept', async () => {
        const never = new Proxy(counted.driver, {
          get: (target, prop, receiver) =>
            prop === 'childrenVersion' ? async () => undefined : Reflect.get(target, prop, receiver),
        });
        const uncached = new TagStore(never);
        await tag(driver, 'lib/app', 'a');
        await made.settle();
        assert.deepEqual(await uncached.list('lib/app'), ['a']);
        await tag(made.other, 'lib/app', 'b');
        assert.deepEqual(await uncached.list('lib/app'), ['a', 'b']);
        assert.equal(counted.listings(), 2);
        assert.deepEqual(uncached.cached, { entries: 0, names: 0 });
        await assert.rejects(uncached.list('nope'), isNameUnknown('nope'));
      });

      if (driverName === 'filesystem') {
        it('a tag added in the same timestamp tick as a listing is listed (nothing is kept while the directory is recent)', async () => {
          const root = made.root!;
          const tagsDir = join(root, layout.tagsDir('lib/app'));
          await tag(driver, 'lib/app', 'a');
          // whole milliseconds, so that utimes can set exactly this mtime again below
          const { mtime } = await stat(tagsDir);
          await utimes(tagsDir, mtime, mtime);
          assert.deepEqual(await cachedStore.list('lib/app'), ['a']);
          // Distribution adds a tag; a coarse clock gives the directory the same mtime as before
          await mkdir(join(tagsDir, 'b', 'current'), { recursive: true });
          await writeFile(join(tagsDir, 'b', 'current', 'link'), DIGEST);
          await utimes(tagsDir, mtime, mtime);
          assert.deepEqual(await cachedStore.list('lib/app'), ['a', 'b']);
          // and once the directory has settled the list is kept, and a later change still shows
          await made.settle();
          assert.deepEqual(await cachedStore.list('lib/app'), ['a', 'b']);
          assert.deepEqual(await cachedStore.list('lib/app'), ['a', 'b']);
          const listings = counted.listings();
          await mkdir(join(tagsDir, 'c', 'current'), { recursive: true });
          assert.deepEqual(await cachedStore.list('lib/app'), ['a', 'b', 'c']);
          assert.equal(counted.listings(), listings + 1);
        });
      }
    });
  });
}

describe('ListingCache', () => {
  it('serves an entry only for the version it was read under, and drops it otherwise', () => {
    const cache = new ListingCache({ maxEntries: 10, maxNames: 100 });
    const names = cache.set('k', 'v1', ['a', 'b']);
    assert.equal(cache.get('k', 'v1'), names);
    assert.equal(cache.get('k', 'v2'), undefined);
    assert.equal(cache.get('k', 'v1'), undefined);
    assert.deepEqual(cache.size, { entries: 0, names: 0 });
  });

  it('replacing an entry keeps the count of names right', () => {
    const cache = new ListingCache({ maxEntries: 10, maxNames: 100 });
    cache.set('k', 'v1', ['a', 'b', 'c']);
    cache.set('k', 'v2', ['a']);
    cache.set('j', 'v1', ['x', 'y']);
    assert.deepEqual(cache.size, { entries: 2, names: 3 });
    cache.delete('k');
    cache.delete('missing');
    assert.deepEqual(cache.size, { entries: 1, names: 2 });
  });

  it('evicts the least recently used entries until both limits hold', () => {
    const cache = new ListingCache({ maxEntries: 3, maxNames: 5 });
    cache.set('a', 'v', ['1', '2']);
    cache.set('b', 'v', ['1', '2']);
    cache.set('c', 'v', ['1']);
    cache.get('a', 'v'); // order of use: b, c, a
    cache.set('d', 'v', ['1', '2', '3']); // 8 names, 4 entries: b goes (6 names), then c
    assert.deepEqual(cache.size, { entries: 2, names: 5 });
    assert.ok(cache.get('a', 'v'));
    assert.ok(cache.get('d', 'v'));
    assert.equal(cache.get('b', 'v'), undefined);
    assert.equal(cache.get('c', 'v'), undefined);
  });

  it('keeps nothing with maxEntries 0, and no list longer than maxNames', () => {
    assert.deepEqual(Object.isFrozen(new ListingCache({ maxEntries: 0, maxNames: 10 }).set('a', 'v', ['x'])), true);
    const none = new ListingCache({ maxEntries: 0, maxNames: 10 });
    none.set('a', 'v', ['x']);
    assert.deepEqual(none.size, { entries: 0, names: 0 });
    const short = new ListingCache({ maxEntries: 5, maxNames: 2 });
    short.set('a', 'v', ['x', 'y', 'z']);
    assert.deepEqual(short.size, { entries: 0, names: 0 });
  });
});

describe('pageOf: a page of a sorted list', () => {
  const all = ['a', 'b', 'c', 'd', 'e'];
  const cases: [string, { n: number; last?: string }, string[], boolean][] = [
    ['from the start', { n: 2 }, ['a', 'b'], true],
    ['everything fits', { n: 5 }, all, false],
    ['more room than entries', { n: 100 }, all, false],
    ['last in the middle', { n: 2, last: 'b' }, ['c', 'd'], true],
    ['last in the middle, reaching the end exactly', { n: 3, last: 'b' }, ['c', 'd', 'e'], false],
    ['last before the first', { n: 2, last: '0' }, ['a', 'b'], true],
    ['last after the end', { n: 2, last: 'z' }, [], false],
    ['last equal to the final entry', { n: 2, last: 'e' }, [], false],
    ['last not an entry', { n: 2, last: 'bb' }, ['c', 'd'], true],
    ['n=0', { n: 0 }, [], false],
    ['n=0 in the middle', { n: 0, last: 'b' }, [], false],
  ];
  for (const [title, page, items, more] of cases) {
    it(title, () => assert.deepEqual(pageOf(all, page), { items, more }));
  }
});

describe('parsePageQuery', () => {
  const limits = { defaultN: DEFAULT_TAGS_PAGE, max: 1000 };
  it('n absent: the default, capped by the maximum', () => {
    assert.deepEqual(parsePageQuery({}, limits), { n: 100, last: undefined });
    assert.deepEqual(parsePageQuery({}, { defaultN: 100, max: 5 }), { n: 5, last: undefined });
  });
  it('n and last given', () => {
    assert.deepEqual(parsePageQuery({ n: '7', last: 'v1' }, limits), { n: 7, last: 'v1' });
    assert.deepEqual(parsePageQuery({ n: '0' }, limits), { n: 0, last: undefined });
    assert.deepEqual(parsePageQuery({ n: '1000' }, limits), { n: 1000, last: undefined });
    assert.deepEqual(parsePageQuery({ n: '007' }, limits), { n: 7, last: undefined });
  });
  it('an empty last is no last', () => {
    assert.deepEqual(parsePageQuery({ n: '3', last: '' }, limits), { n: 3, last: undefined });
  });
  for (const bad of ['abc', '-1', '1.5', '', ' 1', '+5', '1e3', '0x10', '1001', '99999999999999999999999']) {
    it(`n=${JSON.stringify(bad)} is PAGINATION_NUMBER_INVALID`, () => {
      assert.throws(
        () => parsePageQuery({ n: bad }, limits),
        (err: unknown) => err instanceof RegistryError && err.code === 'PAGINATION_NUMBER_INVALID' && /from 0 to 1000/.test(err.message),
      );
    });
  }
});

describe('nextLink', () => {
  it('is a relative URL in angle brackets with n then last', () => {
    assert.equal(nextLink(normalisePrefix(undefined), '/v2/_catalog', 2, 'b'), '</v2/_catalog?n=2&last=b>; rel="next"');
    assert.equal(nextLink(normalisePrefix('/'), '/v2/lib/app/tags/list', 100, 'v1.0'), '</v2/lib/app/tags/list?n=100&last=v1.0>; rel="next"');
  });
  it('escapes a / in last as Distribution does (%2F) and keeps the http.prefix', () => {
    assert.equal(nextLink(normalisePrefix('/registry/'), '/v2/_catalog', 5, 'a/b'), '</registry/v2/_catalog?n=5&last=a%2Fb>; rel="next"');
  });
});
