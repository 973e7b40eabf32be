/**
 * Without http.secret, berth generates the upload-URL secret once and keeps it in storage: an
 * upload started before a restart finishes after it, and instances on one storage accept each
 * other's URLs. With http.secret set or in read-only mode, nothing is written.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { startBerth } from '../helpers/berth.js';
import { errorCodes, randomBlob } from '../helpers/blobs.js';

const SECRET_FILE = 'docker/registry/v2/_berth/upload-secret';

async function startUpload(url: string, name: string, chunk: Buffer<ArrayBuffer>): Promise<URL> {
  const started = await fetch(`${url}/v2/${name}/blobs/uploads/`, { method: 'POST' });
  assert.equal(started.status, 202);
  const patched = await fetch(new URL(started.headers.get('location')!, url), {
    method: 'PATCH',
    headers: { 'content-type': 'application/octet-stream', 'content-range': `0-${chunk.length - 1}` },
    body: chunk,
  });
  assert.equal(patched.status, 202);
  return new URL(patched.headers.get('location')!, url);
}

async function finish(location: URL, rest: Buffer<ArrayBuffer>, digest: string): Promise<Response> {
  const put = new URL(location);
  put.searchParams.set('digest', digest);
  return fetch(put, { method: 'PUT', headers: { 'content-type': 'application/octet-stream' }, body: rest });
}

describe('the upload secret without http.secret', () => {
  it('survives a restart: an upload started before it finishes after it', async () => {
    const root = await mkdtemp(join(tmpdir(), 'berth-secret-'));
    try {
      const blob = randomBlob(64 * 1024);
      const first = await startBerth({ http: { secret: undefined } }, { root });
      const location = await startUpload(first.url, 'a/b', blob.data.subarray(0, 1000));
      await first.stop();
      const stored = readFileSync(join(root, SECRET_FILE), 'utf8');
      assert.ok(stored.length >= 32, 'a generated secret is kept in storage');

      const second = await startBerth({ http: { secret: undefined } }, { root });
      try {
        const moved = new URL(location.pathname + location.search, second.url);
        const put = await finish(moved, blob.data.subarray(1000), blob.digest);
        assert.equal(put.status, 201, await put.text());
        const got = await fetch(`${second.url}/v2/a/b/blobs/${blob.digest}`);
        assert.deepEqual(Buffer.from(await got.arrayBuffer()), blob.data);
        assert.equal(readFileSync(join(root, SECRET_FILE), 'utf8'), stored, 'the secret is not regenerated');
      } finally {
        await second.stop();
      }
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  it('two instances on one root accept each other\'s upload URLs; an instance with another secret refuses with a message naming http.secret', async () => {
    const root = await mkdtemp(join(tmpdir(), 'berth-secret-'));
    const a = await startBerth({ http: { secret: undefined } }, { root });
    const b = await startBerth({ http: { secret: undefined } }, { root });
    const other = await startBerth({ http: { secret: 'another-secret' } }, { root });
    try {
      const blob = randomBlob(4096);
      const location = await startUpload(a.url, 'x/y', blob.data.subarray(0, 100));
      const refused = await finish(new URL(location.pathname + location.search, other.url), blob.data.subarray(100), blob.digest);
      assert.equal(refused.status, 400);
      const body = await refused.clone().json() as { errors: { message: string }[] };
      assert.deepEqual(await errorCodes(refused), ['BLOB_UPLOAD_INVALID']);
      assert.match(body.errors[0].message, /http\.secret/);
      const put = await finish(new URL(location.pathname + location.search, b.url), blob.data.subarray(100), blob.digest);
      assert.equal(put.status, 201);
    } finally {
      await Promise.all([a.stop(), b.stop(), other.stop()]);
      await rm(root, { recursive: true, force: true });
    }
  });

  it('writes nothing with http.secret configured or in read-only mode', async () => {
    for (const overrides of [{ http: { secret: 'configured' } }, { http: { secret: undefined }, storage: { maintenance: { readonly: { enabled: true } } } }]) {
      const root = await mkdtemp(join(tmpdir(), 'berth-secret-'));
      const registry = await startBerth(overrides, { root });
      try {
        assert.equal((await fetch(`${registry.url}/v2/`)).status, 200);
        assert.equal(existsSync(join(root, SECRET_FILE)), false, JSON.stringify(overrides));
      } finally {
        await registry.stop();
        await rm(root, { recursive: true, force: true });
      }
    }
  });
});
