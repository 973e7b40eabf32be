/**
 * The reconciler's batched fingerprints (src/registry/indexing/fingerprint.ts `fingerprints`,
 * through the filesystem's inspectDirectories) are the values the single calls give: a fingerprint
 * kept by either (the rebuild, the reconciler before) compares equal, whatever the repository's
 * shape (tags without a current link, a file where a directory belongs, a missing repository,
 * nested repositories, sha512). And they change as the single calls' do: a tag moved by rewriting
 * its link in place (as Distribution does) changes its repository's fingerprint alone.
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { beginFingerprint, fingerprints } from '../../src/registry/indexing/fingerprint.js';
import { FilesystemDriver } from '../../src/storage/filesystem.js';
import { ForwardingDriver } from '../../src/storage/forwarding.js';
import type { StorageDriver } from '../../src/storage/driver.js';

const REPOS = 'docker/registry/v2/repositories';
const DIGEST = `sha256:${'a'.repeat(64)}`;
const DIGEST_512 = `sha512:${'b'.repeat(128)}`;

/** the same driver without its batch call: fingerprints by the single calls */
class SingleCalls extends ForwardingDriver {
  override get inspectDirectories(): StorageDriver['inspectDirectories'] {
    return undefined;
  }
}

let root: string;
let driver: FilesystemDriver;
before(async () => {
  root = await mkdtemp(join(tmpdir(), 'berth-fingerprint-batch-'));
  // vouches for directories changed more than 5 ms ago
  driver = new FilesystemDriver({ rootdirectory: root, settleMs: 5 });
});
after(async () => {
  await driver.close();
  await rm(root, { recursive: true, force: true });
});

async function file(path: string, content: string): Promise<void> {
  await mkdir(join(root, path, '..'), { recursive: true });
  await writeFile(join(root, path), content);
}

/** files older than the fingerprint's settle time: their fingerprints are settled */
const storeNow = () => Date.now() + 60_000;
const settle = () => new Promise((resolve) => setTimeout(resolve, 20));

const NAMES = ['plain', 'team/app', 'team', 'odd', 'layers-only', 'sha512', 'missing', 'empty'];

describe("the reconciler's batched fingerprints", () => {
  before(async () => {
    for (const [name, tags] of [['plain', ['latest', 'v1']], ['team/app', ['a']], ['team', ['x']]] as const) {
      await file(`${REPOS}/${name}/_layers/sha256/${'a'.repeat(64)}/link`, DIGEST);
      await file(`${REPOS}/${name}/_manifests/revisions/sha256/${'a'.repeat(64)}/link`, DIGEST);
      for (const tag of tags) await file(`${REPOS}/${name}/_manifests/tags/${tag}/current/link`, DIGEST);
    }
    // a tag without current/link (a push that died half-way), one whose `current` is a file, a
    // file where `_layers/sha256` belongs, and a revisions directory that is a file
    await mkdir(join(root, REPOS, 'odd/_manifests/tags/no-link/current'), { recursive: true });
    await file(`${REPOS}/odd/_manifests/tags/file-current/current`, 'not a directory');
    await file(`${REPOS}/odd/_manifests/tags/ok/current/link`, DIGEST);
    await file(`${REPOS}/odd/_layers/sha256`, 'not a directory');
    await file(`${REPOS}/odd/_manifests/revisions`, 'not a directory');
    await file(`${REPOS}/layers-only/_layers/sha256/${'a'.repeat(64)}/link`, DIGEST);
    await file(`${REPOS}/sha512/_manifests/revisions/sha512/${'b'.repeat(128)}/link`, DIGEST_512);
    await file(`${REPOS}/sha512/_manifests/tags/t/current/link`, DIGEST_512);
    await mkdir(join(root, REPOS, 'empty'), { recursive: true });
    await settle();
  });

  it('are the single calls’ values, repository by repository, in order', async () => {
    const batched = await fingerprints(driver, NAMES, storeNow, 8);
    const single = await fingerprints(new SingleCalls(driver), NAMES, storeNow, 8);
    assert.deepEqual(batched, single);
    // by the directory tokens, not the walk (which the missing repository gets on both)
    assert.deepEqual(
      batched.map((f) => f.version.slice(0, 2)),
      NAMES.map((n) => (n === 'missing' ? 'w:' : 't:')),
    );
    assert.ok(batched.every((f) => f.settled));
    assert.equal(new Set(batched.map((f) => f.version)).size, NAMES.length);
    // the rebuild's first half (the tokens) through the batch call finishes to the same value
    const finish = await beginFingerprint(driver, 'team/app', storeNow);
    const link = await driver.stat(`/${REPOS}/team/app/_manifests/tags/a/current/link`);
    assert.equal(finish?.([{ tag: 'a', size: link.size, modTimeMs: link.modTime.getTime() }]).version, batched[1].version);
  });

  it("change for a tag's link rewritten in place, and only for its repository", async () => {
    const before = await fingerprints(driver, NAMES, storeNow, 8);
    // Distribution moves a tag by rewriting current/link: the directories keep their mtimes
    const link = join(root, REPOS, 'plain/_manifests/tags/v1/current/link');
    await writeFile(link, `sha256:${'c'.repeat(64)}`);
    const past = new Date(Date.now() - 10_000);
    for (const dir of ['plain/_manifests/tags/v1/current', 'plain/_manifests/tags/v1']) await utimes(join(root, REPOS, dir), past, past);
    await settle();
    const after = await fingerprints(driver, NAMES, storeNow, 8);
    assert.deepEqual(
      NAMES.filter((_, i) => after[i].version !== before[i].version),
      ['plain'],
    );
    assert.deepEqual(after, await fingerprints(new SingleCalls(driver), NAMES, storeNow, 8));
  });

  it('are unsettled for a link changed within the settle time, as the single calls say', async () => {
    await file(`${REPOS}/team/_manifests/tags/x/current/link`, `sha256:${'d'.repeat(64)}`);
    await settle();
    const [batched] = await fingerprints(driver, ['team'], Date.now, 8);
    const [single] = await fingerprints(new SingleCalls(driver), ['team'], Date.now, 8);
    assert.equal(batched.settled, false);
    assert.deepEqual(batched, single);
  });
});
