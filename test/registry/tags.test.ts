import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, it } from 'node:test';
import { pageOf, parsePageQuery, nextLink, DEFAULT_TAGS_PAGE } from '../../src/http/pagination.js';
import type { Digest } from '../../src/registry/digest.js';
import { RegistryError } from '../../src/registry/errors.js';
import { TagStore } from '../../src/registry/tags.js';
import type { StorageDriver } from '../../src/storage/driver.js';
import { FilesystemDriver } from '../../src/storage/filesystem.js';
import { InMemoryDriver } from '../../src/storage/inmemory.js';
import * as layout from '../../src/storage/layout.js';

const DIGEST = `sha256:${'ab'.repeat(32)}` as Digest;

async function tag(driver: StorageDriver, name: string, ...tags: string[]): Promise<void> {
  await driver.putContent(layout.manifestRevisionLink(name, DIGEST), layout.linkContent(DIGEST));
  for (const t of tags) {
    await driver.putContent(layout.tagIndexLink(name, t, DIGEST), layout.linkContent(DIGEST));
    await driver.putContent(layout.tagCurrentLink(name, t), layout.linkContent(DIGEST));
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

const drivers: [string, () => Promise<{ driver: StorageDriver; cleanup(): Promise<void> }>][] = [
  ['inmemory', async () => ({ driver: new InMemoryDriver(), cleanup: async () => undefined })],
  [
    'filesystem',
    async () => {
      const root = await mkdtemp(join(tmpdir(), 'berth-tags-'));
      return { driver: new FilesystemDriver({ rootdirectory: root }), cleanup: () => rm(root, { recursive: true, force: true }) };
    },
  ],
];

for (const [driverName, make] of drivers) {
  describe(`TagStore (${driverName})`, () => {
    let driver: StorageDriver;
    let cleanup: () => Promise<void>;
    let store: TagStore;
    beforeEach(async () => {
      ({ driver, cleanup } = await make());
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
      await driver.putContent(layout.layerLink('blobs/only', DIGEST), layout.linkContent(DIGEST));
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
  });
}

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
    assert.equal(nextLink(undefined, '/v2/_catalog', 2, 'b'), '</v2/_catalog?n=2&last=b>; rel="next"');
    assert.equal(nextLink('/', '/v2/lib/app/tags/list', 100, 'v1.0'), '</v2/lib/app/tags/list?n=100&last=v1.0>; rel="next"');
  });
  it('escapes a / in last as Distribution does (%2F) and keeps the http.prefix', () => {
    assert.equal(nextLink('/registry/', '/v2/_catalog', 5, 'a/b'), '</registry/v2/_catalog?n=5&last=a%2Fb>; rel="next"');
  });
});
