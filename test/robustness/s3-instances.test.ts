/**
 * Several berth processes on one bucket behave as one registry (issue 4): same storage.s3 and the
 * same http.secret. A chunked upload started on one instance is continued and finished on the
 * other; a push through one is pulled through the other; the same blob pushed through both at
 * once ends up stored once.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { ListMultipartUploadsCommand } from '@aws-sdk/client-s3';
import { validateConfig } from '../../src/config/load.js';
import { purgeUploads } from '../../src/registry/purge.js';
import { S3Driver } from '../../src/storage/s3/driver.js';
import { MiB, PatternBlob, startBerthProcess, streamDownload, streamRequest, type BerthProcess } from '../helpers/berth-process.js';
import { CEPH_TOOLS, startCeph, type CephS3 } from '../helpers/ceph.js';
import { buildImage, pushImageOK } from '../helpers/images.js';
import { needTools } from '../helpers/tools.js';

describe('two berth processes on one bucket (s3, Ceph radosgw)', needTools(CEPH_TOOLS, 'the several-instances tests'), () => {
  let ceph: CephS3;
  let a: BerthProcess;
  let b: BerthProcess;
  let store: S3Driver;
  before(async () => {
    ceph = await startCeph();
    const params = ceph.params(await ceph.createBucket('instances'), { rootdirectory: '/shared', chunksize: 6 * MiB });
    [a, b] = await Promise.all([startBerthProcess({ s3: params }), startBerthProcess({ s3: params })]);
    store = new S3Driver(validateConfig({ version: '0.1', storage: { s3: params } }, 'test').storage.s3!);
  });
  after(async () => {
    await store?.close();
    await Promise.all([a?.stop(), b?.stop()]);
    await ceph?.stop();
  });

  /** the same upload URL on the other instance (clients keep host and path; the state token is shared) */
  const on = (server: BerthProcess, location: string) => {
    const url = new URL(location, a.url);
    const target = new URL(server.url);
    url.host = target.host;
    return url;
  };

  /** GET through `server`, following the 307 to the store */
  const pull = async (server: BerthProcess, name: string, digest: string) => {
    const res = await fetch(`${server.url}/v2/${name}/blobs/${digest}`, { redirect: 'manual' });
    assert.equal(res.status, 307);
    await res.arrayBuffer();
    return streamDownload(res.headers.get('location')!);
  };

  it('a chunked upload started on one instance is continued and finished on the other', { timeout: 120_000 }, async () => {
    const blob = new PatternBlob(20 * MiB + 12345);
    const post = await fetch(`${a.url}/v2/multi/chunked/blobs/uploads/`, { method: 'POST' });
    assert.equal(post.status, 202);
    let location = post.headers.get('location')!;
    const cuts = [0, 7 * MiB, 7 * MiB + 100, 15 * MiB, blob.size];
    const servers = [a, b, a, b];
    for (let i = 0; i < servers.length; i++) {
      const [start, end] = [cuts[i], cuts[i + 1]];
      const res = await streamRequest(on(servers[i], location), {
        method: 'PATCH',
        headers: { 'content-type': 'application/octet-stream', 'content-length': end - start, 'content-range': `${start}-${end - 1}` },
        body: blob.chunks(start, end),
      });
      assert.equal(res.status, 202, `PATCH ${i} on ${servers[i] === a ? 'a' : 'b'}: ${res.body}`);
      assert.equal(res.headers.range, `0-${end - 1}`);
      location = res.headers.location as string;
      // the other instance sees the same progress
      const other = servers[i] === a ? b : a;
      const status = await fetch(on(other, location));
      assert.equal(status.status, 204);
      assert.equal(status.headers.get('range'), `0-${end - 1}`);
    }
    const url = on(b, location);
    url.searchParams.set('digest', blob.digest());
    const put = await fetch(url, { method: 'PUT' });
    assert.equal(put.status, 201, await put.text());
    for (const server of [a, b]) {
      const got = await pull(server, 'multi/chunked', blob.digest());
      assert.equal(got.status, 200);
      assert.equal(got.digest, blob.digest());
    }
  });

  /** a new upload's Location */
  const startUpload = async (server: BerthProcess, name: string) => {
    const post = await fetch(`${server.url}/v2/${name}/blobs/uploads/`, { method: 'POST' });
    assert.equal(post.status, 202);
    return post.headers.get('location')!;
  };

  /** PATCHes the bytes of `blob` between `cuts` to the upload at `location`, the i-th on servers[i]; returns the last Location */
  const patchAcross = async (location: string, blob: PatternBlob, cuts: number[], servers: BerthProcess[]) => {
    for (let i = 0; i + 1 < cuts.length; i++) {
      const [start, end] = [cuts[i], cuts[i + 1]];
      const res = await streamRequest(on(servers[i], location), {
        method: 'PATCH',
        headers: { 'content-type': 'application/octet-stream', 'content-length': end - start, 'content-range': `${start}-${end - 1}` },
        body: blob.chunks(start, end),
      });
      assert.equal(res.status, 202, `PATCH ${i} (${start}-${end - 1}): ${res.body}`);
      assert.equal(res.headers.range, `0-${end - 1}`);
      location = res.headers.location as string;
    }
    return location;
  };

  /** the multipart uploads open in the bucket below the registry's root */
  const openUploads = async () => {
    const out = await store.client.send(new ListMultipartUploadsCommand({ Bucket: store.options.bucket, Prefix: store.key('/docker') }));
    return (out.Uploads ?? []).map((u) => u.Key);
  };

  it('PATCHes alternating between instances, below, at and above the 5 MiB minimum part, keep one upload open', { timeout: 180_000 }, async () => {
    const sizes = [1 * MiB, 5 * MiB, 3, 5 * MiB - 1, 7 * MiB + 1, 5 * MiB + 1, 12 * MiB, 100];
    const cuts = sizes.reduce((acc, n) => [...acc, acc.at(-1)! + n], [0]);
    const blob = new PatternBlob(cuts.at(-1)!);
    const name = 'multi/alternating';
    const location = await patchAcross(await startUpload(a, name), blob, cuts, sizes.map((_, i) => (i % 2 ? b : a)));
    // one multipart upload for the upload's data, open between requests
    const uuid = new URL(location, a.url).pathname.split('/').at(-1)!;
    assert.deepEqual(await openUploads(), [store.key(`/docker/registry/v2/repositories/${name}/_uploads/${uuid}/data`)]);
    const url = on(a, location);
    url.searchParams.set('digest', blob.digest());
    const put = await fetch(url, { method: 'PUT' });
    assert.equal(put.status, 201, await put.text());
    for (const server of [a, b]) assert.equal((await pull(server, name, blob.digest())).digest, blob.digest());
    assert.deepEqual(await openUploads(), []);
  });

  it('two PATCHes of one upload at once on two instances: one 202, the other 416 with the kept range; the upload holds the winner\'s bytes only', { timeout: 180_000 }, async () => {
    const name = 'multi/racing';
    const blobs = [new PatternBlob(14 * MiB + 7), new PatternBlob(14 * MiB + 7)];
    assert.notEqual(blobs[0].digest(), blobs[1].digest());
    const location = await startUpload(a, name);
    const results = await Promise.all(
      [a, b].map((server, i) =>
        streamRequest(on(server, location), {
          method: 'PATCH',
          headers: { 'content-type': 'application/octet-stream', 'content-length': blobs[i].size, 'content-range': `0-${blobs[i].size - 1}` },
          body: blobs[i].chunks(0, blobs[i].size),
        }),
      ),
    );
    const statuses = results.map((r) => r.status).sort();
    assert.deepEqual(statuses, [202, 416], results.map((r) => `${r.status} ${r.body}`).join('\n'));
    const winner = results.findIndex((r) => r.status === 202);
    const loser = results[1 - winner];
    // the loser is told where the upload stands: nothing yet while the winner is still sending, or the winner's bytes
    assert.ok(['0-0', `0-${blobs[winner].size - 1}`].includes(String(loser.headers.range)), String(loser.headers.range));
    // and nothing of the loser's is kept: the upload is the winner's bytes
    const status = await fetch(on(a, results[winner].headers.location as string));
    assert.equal(status.headers.get('range'), `0-${blobs[winner].size - 1}`);
    const url = on(b, results[winner].headers.location as string);
    url.searchParams.set('digest', blobs[winner].digest());
    const put = await fetch(url, { method: 'PUT' });
    assert.equal(put.status, 201, await put.text());
    for (const server of [a, b]) assert.equal((await pull(server, name, blobs[winner].digest())).digest, blobs[winner].digest());
    assert.deepEqual(await openUploads(), []);
  });

  it('an instance killed between PATCHes: the upload continues on another, nothing acknowledged is lost', { timeout: 180_000 }, async () => {
    const params = ceph.params(store.options.bucket, { rootdirectory: '/shared', chunksize: 6 * MiB });
    const doomed = await startBerthProcess({ s3: params });
    try {
      const blob = new PatternBlob(19 * MiB + 7);
      const name = 'multi/killed';
      // 9 MiB on the doomed instance: a part of 6 MiB and 3 MiB waiting in the pending state
      const location = await patchAcross(await startUpload(doomed, name), blob, [0, 9 * MiB], [doomed]);
      await doomed.kill9();
      const status = await fetch(on(a, location));
      assert.equal(status.status, 204);
      assert.equal(status.headers.get('range'), `0-${9 * MiB - 1}`);
      const put = on(b, await patchAcross(location, blob, [9 * MiB, 14 * MiB, blob.size], [a, b]));
      put.searchParams.set('digest', blob.digest());
      const done = await fetch(put, { method: 'PUT' });
      assert.equal(done.status, 201, await done.text());
      assert.equal((await pull(a, name, blob.digest())).digest, blob.digest());
      assert.deepEqual(await openUploads(), []);
    } finally {
      await doomed.stop();
    }
  });

  it('a cancelled upload and a purged one leave no multipart upload and no state in the bucket', { timeout: 120_000 }, async () => {
    const blob = new PatternBlob(13 * MiB);
    const cancelled = await patchAcross(await startUpload(a, 'multi/cancelled'), blob, [0, 7 * MiB, 13 * MiB], [a, b]);
    const purged = await patchAcross(await startUpload(b, 'multi/purged'), blob, [0, 9 * MiB], [b]);
    assert.equal((await openUploads()).length, 2);
    const del = await fetch(on(b, cancelled), { method: 'DELETE' });
    assert.equal(del.status, 204);
    assert.deepEqual(await openUploads(), [store.key(`/docker/registry/v2/repositories/multi/purged/_uploads/${new URL(purged, a.url).pathname.split('/').at(-1)}/data`)]);
    // what the upload purger of any instance runs, here for every upload started before now
    const result = await purgeUploads(store, new Date(Date.now() + 1000), false);
    assert.equal(result.purged.length, 1);
    assert.deepEqual(await openUploads(), []);
    for (const repo of ['cancelled', 'purged']) await assert.rejects(store.list(`/docker/registry/v2/repositories/multi/${repo}/_uploads`), /path not found/);
  });

  it('an image pushed through one instance is pulled through the other', { timeout: 60_000 }, async () => {
    const image = buildImage('oci-manifest', { layers: 3 });
    await pushImageOK(a.url, 'multi/image', image, 'v1');
    const manifest = await fetch(`${b.url}/v2/multi/image/manifests/v1`, { headers: { accept: image.mediaType } });
    assert.equal(manifest.status, 200);
    assert.ok(Buffer.from(await manifest.arrayBuffer()).equals(image.body));
    for (const blob of image.blobs) {
      const got = await pull(b, 'multi/image', blob.digest);
      assert.equal(got.digest, blob.digest);
    }
    const tags = (await (await fetch(`${b.url}/v2/multi/image/tags/list`)).json()) as { tags: string[] };
    assert.deepEqual(tags.tags, ['v1']);
  });

  it('the same blob pushed through both at once: both 201, one copy stored, no upload left', { timeout: 120_000 }, async () => {
    const blob = new PatternBlob(24 * MiB);
    const name = `multi/same-${randomBytes(3).toString('hex')}`;
    const locations = await Promise.all(
      [a, b].map(async (server) => {
        const post = await fetch(`${server.url}/v2/${name}/blobs/uploads/`, { method: 'POST' });
        assert.equal(post.status, 202);
        const url = new URL(post.headers.get('location')!, server.url);
        url.searchParams.set('digest', blob.digest());
        return url;
      }),
    );
    const results = await Promise.all(locations.map((url) => streamRequest(url, { method: 'PUT', headers: { 'content-length': blob.size }, body: blob.chunks() })));
    for (const res of results) assert.equal(res.status, 201, res.body);
    const hex = blob.digest().slice(7);
    assert.deepEqual(await store.list(`/docker/registry/v2/blobs/sha256/${hex.slice(0, 2)}/${hex}`), [`/docker/registry/v2/blobs/sha256/${hex.slice(0, 2)}/${hex}/data`]);
    assert.equal((await store.stat(`/docker/registry/v2/blobs/sha256/${hex.slice(0, 2)}/${hex}/data`)).size, blob.size);
    await assert.rejects(store.list(`/docker/registry/v2/repositories/${name}/_uploads`), /path not found/);
    for (const server of [a, b]) assert.equal((await pull(server, name, blob.digest())).digest, blob.digest());
  });
});
