/**
 * "A SIGKILL between the move into blobs/ and the repository link makes the retried PUT answer
 * DIGEST_INVALID" (issue 18). A completion now links first and moves second, so the states a kill
 * can leave are planted on disk here, exactly as the steps leave them, and the client's retried
 * PUT of the same upload URL must answer 201 with the blob served. The state only the old order
 * left (blob stored, no link, upload empty) cannot be told from an empty upload naming someone
 * else's blob: it stays DIGEST_INVALID and links nothing (the client uploads again).
 */
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { mkdir, rename, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { pushBlob, randomBlob } from '../helpers/blobs.js';

const REPO = 'retry/app';

describe('a blob upload completion cut short, retried', () => {
  let registry: TestRegistry;
  const v2 = () => join(registry.root!, 'docker/registry/v2');
  const blobData = (digest: string) => join(v2(), 'blobs/sha256', digest.slice(7, 9), digest.slice(7), 'data');
  const layerLink = (name: string, digest: string) => join(v2(), 'repositories', name, '_layers/sha256', digest.slice(7), 'link');
  const uploadDir = (name: string, uuid: string) => join(v2(), 'repositories', name, '_uploads', uuid);

  before(async () => {
    registry = await startBerth();
  });
  after(async () => {
    await registry?.stop();
  });

  /** an upload holding all of `data`, not completed: its Location and id */
  async function uploaded(name: string, data: Buffer<ArrayBuffer>): Promise<{ location: string; uuid: string }> {
    const post = await fetch(`${registry.url}/v2/${name}/blobs/uploads/`, { method: 'POST' });
    assert.equal(post.status, 202);
    const patch = await fetch(new URL(post.headers.get('location')!, registry.url), { method: 'PATCH', body: data, headers: { 'content-type': 'application/octet-stream' } });
    assert.equal(patch.status, 202);
    return { location: new URL(patch.headers.get('location')!, registry.url).toString(), uuid: patch.headers.get('docker-upload-uuid')! };
  }

  const retry = (location: string, digest: string) => {
    const url = new URL(location);
    url.searchParams.set('digest', digest);
    return fetch(url, { method: 'PUT', headers: { 'content-length': '0' } });
  };

  async function assertServed(name: string, blob: { data: Buffer; digest: string }): Promise<void> {
    const res = await fetch(`${registry.url}/v2/${name}/blobs/${blob.digest}`);
    assert.equal(res.status, 200);
    assert.deepEqual(Buffer.from(await res.arrayBuffer()), blob.data);
  }

  it('killed after the move (linked, stored, the upload empty): the retry answers 201', async () => {
    const blob = randomBlob(50_000);
    const { location, uuid } = await uploaded(REPO, blob.data);
    await mkdir(dirname(layerLink(REPO, blob.digest)), { recursive: true });
    await writeFile(layerLink(REPO, blob.digest), blob.digest);
    await mkdir(dirname(blobData(blob.digest)), { recursive: true });
    await rename(join(uploadDir(REPO, uuid), 'data'), blobData(blob.digest));

    const res = await retry(location, blob.digest);
    assert.equal(res.status, 201, await res.text());
    assert.equal(res.headers.get('docker-content-digest'), blob.digest);
    assert.equal(res.headers.get('location'), `${registry.url}/v2/${REPO}/blobs/${blob.digest}`);
    assert.ok(!existsSync(uploadDir(REPO, uuid)), 'the upload is gone');
    await assertServed(REPO, blob);
  });

  it('killed between the link and the move (the data still in the upload): the retry verifies it again and answers 201', async () => {
    const blob = randomBlob(50_000);
    const { location, uuid } = await uploaded(REPO, blob.data);
    await mkdir(dirname(layerLink(REPO, blob.digest)), { recursive: true });
    await writeFile(layerLink(REPO, blob.digest), blob.digest);
    assert.equal((await fetch(`${registry.url}/v2/${REPO}/blobs/${blob.digest}`, { method: 'HEAD' })).status, 404, 'linked but not stored: unknown');

    const res = await retry(location, blob.digest);
    assert.equal(res.status, 201, await res.text());
    assert.ok(!existsSync(uploadDir(REPO, uuid)));
    await assertServed(REPO, blob);
  });

  it('an empty upload naming a blob stored for another repository: DIGEST_INVALID, nothing linked', async () => {
    const secret = randomBlob(1000);
    assert.equal((await pushBlob(registry.url, 'private/repo', secret.data)).status, 201);
    for (const plant of [false, true]) {
      const post = await fetch(`${registry.url}/v2/${REPO}/blobs/uploads/`, { method: 'POST' });
      const location = new URL(post.headers.get('location')!, registry.url).toString();
      // planted: the state the old order (move, then link) left when killed between the two
      if (plant) await writeFile(join(uploadDir(REPO, post.headers.get('docker-upload-uuid')!), 'data'), '');
      const res = await retry(location, secret.digest);
      assert.equal(res.status, 400);
      assert.equal(((await res.json()) as { errors: { code: string }[] }).errors[0].code, 'DIGEST_INVALID');
      assert.equal((await fetch(`${registry.url}/v2/${REPO}/blobs/${secret.digest}`, { method: 'HEAD' })).status, 404);
      assert.ok(!existsSync(layerLink(REPO, secret.digest)));
    }
  });
});
