/**
 * "A manifest PUT racing a DELETE of the same digest" (issue 18): 36 of 60 DELETEs and 21 PUTs
 * answered 500, and revisions were left without their berth.json. Each round here sends a PUT and
 * a DELETE of one manifest at the same moment; every answer must be one the spec lists, and after
 * each round the store must be whole: the revision served with its media type, or gone.
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { startBerthProcess, type BerthProcess } from '../helpers/berth-process.js';
import { buildImage, pushContent, putManifest, type Image } from '../helpers/images.js';

const ROUNDS = 60;
const REPO = 'race/app';

function revisionDir(root: string, digest: string): string {
  return join(root, 'docker/registry/v2/repositories', REPO, '_manifests/revisions/sha256', digest.slice('sha256:'.length));
}

/** one PUT and one DELETE of `image` sent together to `putURL` and `deleteURL`, then the store checked through `checkURL` */
async function race(putURL: string, deleteURL: string, checkURL: string, root: string, image: Image): Promise<{ put: number; del: number }> {
  const [put, del] = await Promise.all([
    putManifest(putURL, REPO, 'latest', image.body, image.mediaType),
    fetch(`${deleteURL}/v2/${REPO}/manifests/${image.digest}`, { method: 'DELETE' }),
  ]);
  const answers = { put: put.status, del: del.status };
  assert.equal(put.status, 201, `PUT answered ${put.status}: ${await put.text()}`);
  assert.ok(del.status === 202 || del.status === 404, `DELETE answered ${del.status}: ${await del.text()}`);
  const got = await fetch(`${checkURL}/v2/${REPO}/manifests/${image.digest}`, { headers: { accept: image.mediaType } });
  if (got.status === 200) {
    assert.equal(got.headers.get('content-type'), image.mediaType);
    assert.ok(Buffer.from(await got.arrayBuffer()).equals(image.body));
    assert.ok(existsSync(join(revisionDir(root, image.digest), 'berth.json')), 'a stored revision has its berth.json');
  } else {
    assert.equal(got.status, 404, `GET answered ${got.status}: ${await got.text()}`);
    assert.ok(!existsSync(join(revisionDir(root, image.digest), 'link')), 'no revision link is left behind');
  }
  return answers;
}

describe('a manifest PUT racing a DELETE of the same digest', () => {
  let registry: TestRegistry;
  let image: Image;
  before(async () => {
    registry = await startBerth();
    // an OCI index: its berth.json matters (a docker list and an OCI index cannot always be told apart by content)
    image = buildImage('oci-index');
    await pushContent(registry.url, REPO, image);
  });
  after(async () => {
    await registry?.stop();
  });

  it(`${ROUNDS} rounds in one process: spec answers only, the store whole after each`, { timeout: 120_000 }, async () => {
    const seen = new Map<string, number>();
    for (let i = 0; i < ROUNDS; i++) {
      const { put, del } = await race(registry.url, registry.url, registry.url, registry.root!, image);
      seen.set(`${put}/${del}`, (seen.get(`${put}/${del}`) ?? 0) + 1);
    }
    console.log(`PUT/DELETE answers over ${ROUNDS} rounds: ${JSON.stringify(Object.fromEntries(seen))}`);
  });
});

describe('a manifest PUT racing a DELETE of the same digest, on two processes sharing a root', () => {
  let first: BerthProcess;
  let second: BerthProcess;
  let image: Image;
  before(async () => {
    first = await startBerthProcess();
    second = await startBerthProcess({ root: first.root });
    image = buildImage('oci-index');
    await pushContent(first.url, REPO, image);
  });
  after(async () => {
    await second?.stop();
    await first?.stop();
  });

  it(`${ROUNDS} rounds, PUT on one and DELETE on the other: spec answers only, the store whole after each`, { timeout: 180_000 }, async () => {
    for (let i = 0; i < ROUNDS; i++) await race(first.url, second.url, i % 2 === 0 ? first.url : second.url, first.root, image);
  });
});
