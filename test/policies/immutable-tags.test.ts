/**
 * Immutable tags (policies[].immutabletags, src/policies/): a tag that matches never moves to
 * another digest and the manifest it names is never deleted (403 DENIED naming the policy and the
 * glob); pushing the same digest again is allowed; a tag the `!` glob excludes moves freely; two
 * racing pushes of one new tag leave it naming one of them. Retention and garbage collection keep
 * what an immutable tag reaches.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { buildImage, pushContent, pushImage, pushImageOK, putManifest } from '../helpers/images.js';
import { applyRetention } from '../../src/registry/retention/index.js';
import { compilePolicies } from '../../src/registry/retention/policy.js';
import { collectGarbage } from '../../src/registry/gc/index.js';
import { expireCache } from '../../src/registry/expiry/index.js';
import { fixedTags } from '../../src/policies/immutable-tags.js';
import { PolicySet } from '../../src/policies/match.js';
import { ImmutableTags } from '../../src/policies/immutable-tags.js';

const POLICIES = [
  { repositories: ['prod/**'], immutabletags: ['v*', '!v*-rc*'] },
  { repositories: ['prod/scratch'], immutabletags: ['never-matches'] },
];

async function errorBody(res: Response): Promise<{ code: string; message: string; detail: any }> {
  const body = (await res.json()) as { errors: { code: string; message: string; detail: any }[] };
  return body.errors[0];
}

describe('immutable tags: the rule', () => {
  it('matches globs, excludes ! globs, and the most specific policy decides', () => {
    const tags = new ImmutableTags(new PolicySet(POLICIES));
    assert.match(tags.rule('prod/app', 'v1.0')!, /"v\*" of policies\[0\] \(prod\/\*\*\)/);
    assert.equal(tags.rule('prod/app', 'v1.0-rc1'), undefined);
    assert.equal(tags.rule('prod/app', 'latest'), undefined);
    assert.equal(tags.rule('dev/app', 'v1.0'), undefined);
    assert.equal(tags.rule('prod/scratch', 'v1.0'), undefined, 'the exact name decides over prod/**');
    assert.equal(fixedTags([{ repositories: ['**'], quota: { bytes: 1 } }]), undefined);
  });
});

describe('immutable tags over the API', () => {
  let registry: TestRegistry;
  before(async () => {
    registry = await startBerth({ policies: POLICIES });
  });
  after(async () => registry?.stop());

  it('refuses to move an immutable tag, with 403 DENIED naming the policy and the glob; the same digest again is allowed', async () => {
    const first = await pushImageOK(registry.url, 'prod/app', buildImage('oci-manifest'), 'v1');
    const again = await putManifest(registry.url, 'prod/app', 'v1', first.body, first.mediaType);
    assert.equal(again.status, 201);
    const other = buildImage('oci-manifest');
    const moved = await pushImage(registry.url, 'prod/app', other, 'v1');
    assert.equal(moved.status, 403);
    const error = await errorBody(moved);
    assert.equal(error.code, 'DENIED');
    assert.match(error.message, /immutable tag rule "v\*" of policies\[0\] \(prod\/\*\*\)/);
    assert.equal(error.detail.digest, first.digest);
    const head = await fetch(`${registry.url}/v2/prod/app/manifests/v1`, { method: 'HEAD', headers: { accept: first.mediaType } });
    assert.equal(head.headers.get('docker-content-digest'), first.digest);
  });

  it('refuses a push by digest whose ?tag= would move an immutable tag', async () => {
    const first = await pushImageOK(registry.url, 'prod/app', buildImage('oci-manifest'), 'v2');
    const other = buildImage('oci-manifest');
    await pushContent(registry.url, 'prod/app', other);
    const res = await putManifest(registry.url, 'prod/app', `${other.digest}?tag=v2`, other.body, other.mediaType);
    assert.equal(res.status, 403);
    const head = await fetch(`${registry.url}/v2/prod/app/manifests/v2`, { method: 'HEAD', headers: { accept: first.mediaType } });
    assert.equal(head.headers.get('docker-content-digest'), first.digest);
  });

  it('moves tags the policy excludes or does not name', async () => {
    for (const tag of ['v3-rc1', 'latest']) {
      await pushImageOK(registry.url, 'prod/app', buildImage('oci-manifest'), tag);
      await pushImageOK(registry.url, 'prod/app', buildImage('oci-manifest'), tag);
    }
    await pushImageOK(registry.url, 'dev/app', buildImage('oci-manifest'), 'v1');
    await pushImageOK(registry.url, 'dev/app', buildImage('oci-manifest'), 'v1');
  });

  it('refuses to delete the manifest an immutable tag names', async () => {
    const image = await pushImageOK(registry.url, 'prod/app', buildImage('oci-manifest'), 'v4');
    const res = await fetch(`${registry.url}/v2/prod/app/manifests/${image.digest}`, { method: 'DELETE' });
    assert.equal(res.status, 403);
    const error = await errorBody(res);
    assert.equal(error.code, 'DENIED');
    assert.match(error.message, /immutable tag v4 names it/);
    assert.equal((await fetch(`${registry.url}/v2/prod/app/manifests/${image.digest}`, { headers: { accept: image.mediaType } })).status, 200);
    // a manifest only a mutable tag names is deleted as before
    const rc = await pushImageOK(registry.url, 'prod/app', buildImage('oci-manifest'), 'v4-rc1');
    assert.equal((await fetch(`${registry.url}/v2/prod/app/manifests/${rc.digest}`, { method: 'DELETE' })).status, 202);
  });

  it('of two racing pushes of one new immutable tag, one lands and the tag never moves', async () => {
    const images = Array.from({ length: 6 }, () => buildImage('oci-manifest'));
    for (const image of images) await pushContent(registry.url, 'prod/race', image);
    const answers = await Promise.all(images.map((image) => putManifest(registry.url, 'prod/race', 'v9', image.body, image.mediaType)));
    const statuses = answers.map((r) => r.status);
    await Promise.all(answers.map((r) => r.arrayBuffer()));
    assert.equal(statuses.filter((s) => s === 201).length, 1, `statuses ${statuses}`);
    assert.equal(statuses.filter((s) => s === 403).length, 5);
    const winner = images[statuses.indexOf(201)];
    const head = await fetch(`${registry.url}/v2/prod/race/manifests/v9`, { method: 'HEAD', headers: { accept: winner.mediaType } });
    assert.equal(head.headers.get('docker-content-digest'), winner.digest);
  });

  it('retention and garbage collection keep what an immutable tag reaches', async () => {
    const index = buildImage('oci-index');
    await pushImageOK(registry.url, 'prod/kept', index, 'v1');
    await pushImageOK(registry.url, 'prod/kept', buildImage('oci-manifest'), 'old');
    const driver = registry.app.driver;
    const summary = await applyRetention(driver, {
      policies: compilePolicies([{ repositories: ['prod/kept'], keep: {}, delete: { tagsolderthan: 0, untaggedolderthan: 0 } }]),
      fixedTag: fixedTags(POLICIES),
      now: Date.now() + 60_000,
      dryRun: false,
    });
    assert.equal(summary.tagsDeleted, 1, 'the mutable tag went');
    await collectGarbage(driver, { dryRun: false, deleteUntagged: true });
    const got = await fetch(`${registry.url}/v2/prod/kept/manifests/v1`, { headers: { accept: index.mediaType } });
    assert.equal(got.status, 200);
    for (const child of index.children) {
      assert.equal((await fetch(`${registry.url}/v2/prod/kept/manifests/${child.digest}`, { headers: { accept: child.mediaType } })).status, 200);
      for (const blob of child.blobs) assert.equal((await fetch(`${registry.url}/v2/prod/kept/blobs/${blob.digest}`)).status, 200);
    }
    assert.equal((await fetch(`${registry.url}/v2/prod/kept/manifests/old`)).status, 404);
  });

  it("the pull-through cache's expiry keeps an immutable tag and what it reaches", async () => {
    const image = await pushImageOK(registry.url, 'prod/cached', buildImage('oci-manifest'), 'v1');
    const stale = await pushImageOK(registry.url, 'prod/cached', buildImage('oci-manifest'), 'latest');
    const summary = await expireCache(registry.app.driver, { ttlOf: (name) => (name === 'prod/cached' ? 1 : undefined), fixedTag: fixedTags(POLICIES), now: Date.now() + 60_000 });
    assert.equal(summary.tagsRemoved, 1);
    assert.equal((await fetch(`${registry.url}/v2/prod/cached/manifests/v1`, { headers: { accept: image.mediaType } })).status, 200);
    for (const blob of image.blobs) assert.equal((await fetch(`${registry.url}/v2/prod/cached/blobs/${blob.digest}`)).status, 200);
    assert.equal((await fetch(`${registry.url}/v2/prod/cached/manifests/${stale.digest}`)).status, 404);
  });
});
