/**
 * Policies on two berth processes serving one filesystem root and sharing its SQLite index: an
 * immutable tag pushed through one cannot be moved or its manifest deleted through the other, and
 * of racing pushes of one new immutable tag through both, one lands; a quota holds under
 * concurrent pushes through both (of six images with room for three, at most three land, and the
 * use stays within the quota), refused with the detail; a delete gives the space back.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { startBerthProcess, type BerthProcess } from '../helpers/berth-process.js';
import { buildImage, pushContent, pushImageOK, putManifest, type Image } from '../helpers/images.js';

const image = () => buildImage('oci-manifest', { layers: 1, layerSize: 4096 });
/** an image's bytes as a quota counts them: its manifest and its distinct blobs */
const sizeOf = (img: Image) => img.body.length + [...new Map(img.blobs.map((b) => [b.digest, b.size])).values()].reduce((a, b) => a + b, 0);
// images of one shape are of one size (random bytes of fixed lengths)
const SIZE = sizeOf(image());
const QUOTA = SIZE * 3 + 100;

describe('policies on two instances sharing one root and one SQLite index', () => {
  let a: BerthProcess;
  let b: BerthProcess;
  before(async () => {
    const config = {
      policies: [
        { repositories: ['prod/**'], immutabletags: ['v*'] },
        { repositories: ['quota/**'], quota: { bytes: QUOTA } },
      ],
    };
    a = await startBerthProcess({ config });
    b = await startBerthProcess({ root: a.root, config });
  });
  after(async () => {
    await b?.stop();
    await a?.stop();
  });

  it('an immutable tag pushed through one instance can be neither moved nor deleted through the other', async () => {
    const first = await pushImageOK(a.url, 'prod/app', image(), 'v1');
    const other = image();
    await pushContent(b.url, 'prod/app', other);
    const moved = await putManifest(b.url, 'prod/app', 'v1', other.body, other.mediaType);
    assert.equal(moved.status, 403);
    assert.match(((await moved.json()) as { errors: { message: string }[] }).errors[0].message, /immutable tag rule "v\*" of policies\[0\] \(prod\/\*\*\)/);
    const deleted = await fetch(`${b.url}/v2/prod/app/manifests/${first.digest}`, { method: 'DELETE' });
    assert.equal(deleted.status, 403);
    await deleted.arrayBuffer();
    for (const url of [a.url, b.url]) {
      const head = await fetch(`${url}/v2/prod/app/manifests/v1`, { method: 'HEAD', headers: { accept: first.mediaType } });
      assert.equal(head.headers.get('docker-content-digest'), first.digest);
    }
  });

  it('of racing pushes of one new immutable tag through both instances, one lands', async () => {
    // several rounds, each a new tag: the race window is a few storage round trips
    for (let round = 0; round < 8; round++) {
      const images = Array.from({ length: 6 }, image);
      for (const img of images) await pushContent(a.url, 'prod/race', img);
      const tag = `v${round}`;
      const answers = await Promise.all(images.map((img, i) => putManifest(i % 2 ? b.url : a.url, 'prod/race', tag, img.body, img.mediaType)));
      const statuses = answers.map((r) => r.status);
      await Promise.all(answers.map((r) => r.arrayBuffer()));
      assert.ok(statuses.every((s) => s === 201 || s === 403), `statuses ${statuses}`);
      assert.equal(statuses.filter((s) => s === 201).length, 1, `round ${round}: statuses ${statuses}`);
      const winner = images[statuses.indexOf(201)];
      for (const url of [a.url, b.url]) {
        const head = await fetch(`${url}/v2/prod/race/manifests/${tag}`, { method: 'HEAD', headers: { accept: winner.mediaType } });
        assert.equal(head.headers.get('docker-content-digest'), winner.digest);
      }
    }
  });

  it('a quota holds under concurrent pushes through both instances, and a delete gives the space back', async () => {
    const images = Array.from({ length: 6 }, image);
    for (const [i, img] of images.entries()) await pushContent(i % 2 ? b.url : a.url, `quota/r${i}`, img);
    const answers = await Promise.all(images.map((img, i) => putManifest(i % 2 ? b.url : a.url, `quota/r${i}`, 'v1', img.body, img.mediaType)));
    const statuses = answers.map((r) => r.status);
    const bodies = await Promise.all(answers.map((r) => r.text()));
    const landed = statuses.filter((s) => s === 201).length;
    assert.ok(landed >= 1 && landed <= 3, `statuses ${statuses}`);
    assert.equal(landed, 3, `the scope is serialised: exactly three fit (statuses ${statuses})`);
    const refusal = JSON.parse(bodies[statuses.indexOf(403)]).errors[0];
    assert.equal(refusal.code, 'DENIED');
    assert.equal(refusal.detail.quota.bytes, QUOTA);
    assert.equal(refusal.detail.adds.bytes, SIZE);
    const quotas = async (url: string) => ((await (await fetch(`${url}/v2/_berth/ext/quotas`)).json()) as { quotas: { use: { bytes: number; repositories: number } }[] }).quotas[0].use;
    const use = await quotas(b.url);
    assert.ok(use.bytes <= QUOTA, `use ${use.bytes} within the quota ${QUOTA}`);
    assert.deepEqual(use, { bytes: SIZE * 3, repositories: 3 });
    // a delete through one instance makes room for a push through the other
    const gone = statuses.indexOf(201);
    assert.equal((await fetch(`${a.url}/v2/quota/r${gone}/manifests/${images[gone].digest}`, { method: 'DELETE' })).status, 202);
    assert.deepEqual(await quotas(b.url), { bytes: SIZE * 2, repositories: 2 });
    const refused = statuses.indexOf(403);
    assert.equal((await putManifest(b.url, `quota/r${refused}`, 'v1', images[refused].body, images[refused].mediaType)).status, 201);
  });
});
