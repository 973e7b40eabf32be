/**
 * "Two clients pushing the same 64 MiB blob at the same time both get 201 and one copy is stored."
 *
 * Through berth as a child process: two uploads of the same content, their bodies streamed in
 * parallel, completed at the same moment (a chunked PUT each, and a monolithic POST each).
 */
import assert from 'node:assert/strict';
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { blobFiles, MiB, PatternBlob, startBerthProcess, streamDownload, streamRequest, verifyBlobStore, type BerthProcess } from '../helpers/berth-process.js';

describe('two clients push the same blob at once (child process)', () => {
  let berth: BerthProcess;
  before(async () => {
    berth = await startBerthProcess();
  });
  after(async () => {
    await berth?.stop();
  });

  /** the blob's files under blobs/ (there must be exactly one: .../<hex>/data) */
  const copies = async (blob: PatternBlob) => {
    const hex = blob.digest().slice('sha256:'.length);
    return (await blobFiles(berth.root)).filter((f) => f.includes(hex));
  };
  const openUploads = async (name: string) => readdir(join(berth.root, 'docker/registry/v2/repositories', name, '_uploads')).catch(() => [] as string[]);

  for (const [how, names] of [
    ['POST, then PUT ?digest= with the body', ['same/blob', 'same/blob']],
    ['POST, then PUT ?digest= with the body, into two repositories', ['first/repo', 'second/repo']],
  ] as const) {
    it(`${how}: both 201, one copy stored, both read it back`, { timeout: 60_000 }, async () => {
      const blob = new PatternBlob(64 * MiB);
      const locations = await Promise.all(
        names.map(async (name) => {
          const post = await fetch(`${berth.url}/v2/${name}/blobs/uploads/`, { method: 'POST' });
          assert.equal(post.status, 202);
          const location = new URL(post.headers.get('location')!, berth.url);
          location.searchParams.set('digest', blob.digest());
          return location;
        }),
      );
      const results = await Promise.all(locations.map((location) => streamRequest(location, { method: 'PUT', headers: { 'content-length': blob.size }, body: blob.chunks() })));
      for (const res of results) {
        assert.equal(res.status, 201, res.body);
        assert.equal(res.headers['registry-content-digest'], blob.digest());
      }
      assert.equal((await copies(blob)).length, 1, `copies: ${await copies(blob)}`);
      await verifyBlobStore(berth.root);
      for (const name of new Set(names)) {
        const got = await streamDownload(`${berth.url}/v2/${name}/blobs/${blob.digest()}`);
        assert.equal(got.status, 200);
        assert.equal(got.digest, blob.digest());
        assert.deepEqual(await openUploads(name), [], 'completed uploads are removed');
      }
    });
  }

  it('monolithic POST ?digest= from both at once: both 201, one copy stored', { timeout: 60_000 }, async () => {
    const blob = new PatternBlob(64 * MiB);
    const results = await Promise.all(
      [0, 1].map(() =>
        streamRequest(`${berth.url}/v2/mono/same/blobs/uploads/?digest=${blob.digest()}`, { method: 'POST', headers: { 'content-length': blob.size }, body: blob.chunks() }),
      ),
    );
    for (const res of results) assert.equal(res.status, 201, res.body);
    assert.equal((await copies(blob)).length, 1);
    await verifyBlobStore(berth.root);
    const got = await streamDownload(`${berth.url}/v2/mono/same/blobs/${blob.digest()}`);
    assert.equal(got.digest, blob.digest());
    assert.deepEqual(await openUploads('mono/same'), []);
  });
});
