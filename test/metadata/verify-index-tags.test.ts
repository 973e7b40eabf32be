/**
 * `berth verify --index` and a tag directory without a current link: what a push leaves when it
 * dies between the tag's `index` link and its `current` one (TagStore.point writes them in that
 * order). Storage's tag list names such a tag, the index cannot (it names no manifest): verify
 * reports the difference.
 */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { openMetadataIndex } from '../../src/features/metadata.js';
import type { MetadataIndex } from '../../src/metadata/metadata-index.js';
import { verifyIndex } from '../../src/registry/indexing/verify-index.js';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { buildImage, pushImageOK } from '../helpers/images.js';

describe('berth verify --index, a tag directory without a current link', () => {
  let dir: string;
  const registries: TestRegistry[] = [];
  let index: MetadataIndex | undefined;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'berth-verify-tags-'));
  });
  after(async () => {
    await index?.close().catch(() => undefined);
    for (const registry of registries) await registry.stop().catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  });

  it('is reported: storage lists the tag, the index does not', async () => {
    const indexed = await startBerth({ metadata: { sqlite: { path: join(dir, 'index.sqlite') } } });
    registries.push(indexed);
    const image = buildImage('oci-manifest');
    await pushImageOK(indexed.url, 'team/app', image, 'v1');
    index = await openMetadataIndex(indexed.app.config);
    assert.equal(await verifyIndex(indexed.app.driver, index, () => undefined), 0);

    // a push of `v2` that died after the tag's index link, before its current link
    const entry = join(indexed.root!, 'docker/registry/v2/repositories/team/app/_manifests/tags/v2/index/sha256', image.digest.slice('sha256:'.length));
    await mkdir(entry, { recursive: true });
    await writeFile(join(entry, 'link'), image.digest);

    // the listings differ: storage's (berth without the index, on the same root) names v2
    const plain = await startBerth({ metadata: { enabled: false } }, { root: indexed.root });
    registries.push(plain);
    assert.deepEqual(await (await fetch(`${plain.url}/v2/team/app/tags/list`)).json(), { name: 'team/app', tags: ['v1', 'v2'] });
    assert.deepEqual(await (await fetch(`${indexed.url}/v2/team/app/tags/list`)).json(), { name: 'team/app', tags: ['v1'] });

    const lines: string[] = [];
    assert.equal(await verifyIndex(indexed.app.driver, index, (line) => lines.push(line)), 1);
    assert.deepEqual(lines, ["team/app:v2: tag directory in storage without a current link, not in the index (storage's tag list names it; push the tag again or remove its directory)"]);
  });
});
