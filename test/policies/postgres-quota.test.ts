/**
 * A quota enforced by two registries sharing one PostgreSQL index and one filesystem root: the
 * scope's lease row serialises their checks, so of six concurrent pushes with room for three,
 * three land. (The same on SQLite through two processes: two-instances.test.ts.)
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { buildImage, pushContent, putManifest, type Image } from '../helpers/images.js';
import { needPostgres, startPostgres, type TestPostgres } from '../helpers/postgres.js';

const image = () => buildImage('oci-manifest', { layers: 1, layerSize: 4096 });
const sizeOf = (img: Image) => img.body.length + img.blobs.reduce((a, b) => a + b.size, 0);

describe('a quota on two registries sharing one PostgreSQL index', needPostgres(), () => {
  let pg: TestPostgres | undefined;
  let root: string | undefined;
  const registries: TestRegistry[] = [];
  after(async () => {
    for (const registry of registries) await registry.stop().catch(() => undefined);
    await pg?.stop();
    if (root) await rm(root, { recursive: true, force: true });
  });

  it('holds under concurrent pushes through both', async () => {
    pg = await startPostgres();
    root = await mkdtemp(join(tmpdir(), 'berth-pg-quota-'));
    const images = Array.from({ length: 6 }, image);
    const quota = sizeOf(images[0]) * 3 + 100;
    const overrides = { metadata: { postgres: { url: await pg.createDatabase('quota') } }, policies: [{ repositories: ['q/**'], quota: { bytes: quota } }] };
    for (let i = 0; i < 2; i++) registries.push(await startBerth(overrides, { root }));
    const [a, b] = registries;
    for (const [i, img] of images.entries()) await pushContent((i % 2 ? b : a).url, `q/r${i}`, img);
    const answers = await Promise.all(images.map((img, i) => putManifest((i % 2 ? b : a).url, `q/r${i}`, 'v1', img.body, img.mediaType)));
    const statuses = answers.map((r) => r.status);
    await Promise.all(answers.map((r) => r.arrayBuffer()));
    assert.equal(statuses.filter((s) => s === 201).length, 3, `statuses ${statuses}`);
    const use = ((await (await fetch(`${a.url}/v2/_berth/ext/quotas`)).json()) as { quotas: { use: { bytes: number } }[] }).quotas[0].use;
    assert.equal(use.bytes, sizeOf(images[0]) * 3);
    assert.ok(use.bytes <= quota);
  });
});
