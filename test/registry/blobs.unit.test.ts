/** BlobStore and link files on the in-memory driver: links grant access, content is shared. */
import assert from 'node:assert/strict';
import { text } from 'node:stream/consumers';
import { beforeEach, describe, it } from 'node:test';
import { BlobStore } from '../../src/registry/blobs.js';
import { sha256 } from '../../src/registry/digest.js';
import { RegistryError } from '../../src/registry/errors.js';
import * as layout from '../../src/registry/layout.js';
import { linksTo, readLink, writeLink } from '../../src/registry/links.js';
import { InMemoryDriver } from '../../src/storage/inmemory.js';

const blobUnknown = (err: unknown) => err instanceof RegistryError && err.code === 'BLOB_UNKNOWN';

describe('BlobStore (in-memory driver)', () => {
  let driver: InMemoryDriver;
  let blobs: BlobStore;
  const content = Buffer.from('the content of a layer');
  const digest = sha256(content);

  beforeEach(async () => {
    driver = new InMemoryDriver();
    blobs = new BlobStore(driver);
    await driver.putContent(layout.blobData(digest), content);
  });

  it('a stored blob is visible to a repository only once linked into it', async () => {
    assert.equal(await blobs.storedSize(digest), content.length);
    assert.equal(await blobs.isLinked('lib/a', digest), false);
    await assert.rejects(blobs.stat('lib/a', digest), blobUnknown);
    await blobs.link('lib/a', digest);
    assert.deepEqual(await blobs.stat('lib/a', digest), { digest, size: content.length });
    assert.equal(await blobs.isLinked('lib/b', digest), false);
  });

  it('opens the content whole or a range; unstored content is BLOB_UNKNOWN', async () => {
    assert.equal(await text(await blobs.open(digest)), content.toString());
    assert.equal(await text(await blobs.open(digest, 4, 7)), 'content');
    await assert.rejects(blobs.open(sha256('absent')), blobUnknown);
    assert.equal(await blobs.storedSize(sha256('absent')), undefined);
  });

  it('a link without stored content is BLOB_UNKNOWN on stat', async () => {
    const absent = sha256('absent');
    await blobs.link('lib/a', absent);
    await assert.rejects(blobs.stat('lib/a', absent), blobUnknown);
  });

  it('mount links a blob of the source repository; without it in the source: undefined, nothing linked', async () => {
    assert.equal(await blobs.mount('lib/a', 'lib/b', digest), undefined);
    assert.equal(await blobs.isLinked('lib/b', digest), false);
    await blobs.link('lib/a', digest);
    assert.deepEqual(await blobs.mount('lib/a', 'lib/b', digest), { digest, size: content.length });
    assert.equal(await blobs.isLinked('lib/b', digest), true);
  });

  it('unlink removes the repository\'s link only: the content stays for others', async () => {
    await blobs.link('lib/a', digest);
    await blobs.link('lib/b', digest);
    await blobs.unlink('lib/a', digest);
    assert.equal(await blobs.isLinked('lib/a', digest), false);
    assert.deepEqual(await blobs.stat('lib/b', digest), { digest, size: content.length });
    await assert.rejects(blobs.unlink('lib/a', digest), blobUnknown);
  });
});

describe('link files', () => {
  const digest = sha256('x');
  const path = layout.layerLink('lib/a', digest);

  it('hold the digest and nothing else, as Distribution writes them', async () => {
    const driver = new InMemoryDriver();
    await writeLink(driver, path, digest);
    assert.equal((await driver.getContent(path)).toString(), digest);
    assert.equal(await readLink(driver, path), digest);
    assert.equal(await linksTo(driver, path, digest), true);
    assert.equal(await linksTo(driver, path, sha256('y')), false);
  });

  it('read: a trailing newline is tolerated; a missing link or one without a sha256 digest is none', async () => {
    const driver = new InMemoryDriver();
    assert.equal(await readLink(driver, path), undefined);
    await driver.putContent(path, Buffer.from(`${digest}\n`));
    assert.equal(await readLink(driver, path), digest);
    for (const junk of ['', 'sha256:abc', 'not a digest']) {
      await driver.putContent(path, Buffer.from(junk));
      assert.equal(await readLink(driver, path), undefined, JSON.stringify(junk));
    }
  });
});
