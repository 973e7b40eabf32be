/**
 * berth as N stateless instances on one bucket behind a real load balancer (issue 15): Debian's
 * HAProxy, round robin per request, no stickiness, health checks on /readyz; the instances share
 * storage.s3 (Ceph radosgw), http.secret, Redis (rate limits), one PostgreSQL database (the
 * metadata index) and one notification receiver. skopeo and podman push and pull images of many
 * layers through two and three instances, and the index holds each tag as pushed; the PATCHes of
 * one chunked upload land on different instances; an instance killed mid-push leaves the push to
 * succeed on the others (the client retries) and nothing corrupt in the store.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { validateConfig } from '../../src/config/load.js';
import { openMetadataIndex } from '../../src/features/metadata.js';
import type { MetadataIndex } from '../../src/metadata/metadata-index.js';
import { S3Driver } from '../../src/storage/s3/driver.js';
import { MiB, PatternBlob, startBerthProcess, streamRequest, type BerthProcess } from '../helpers/berth-process.js';
import { CEPH_TOOLS, startCeph, type CephS3 } from '../helpers/ceph.js';
import { buildClientImage, blobPath, type ClientImage } from '../helpers/client-images.js';
import { startHaproxy, type Balancer } from '../helpers/haproxy.js';
import { needPostgres, startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { startReceiver, type Receiver } from '../helpers/receiver.js';
import { startRedis, type TestRedis } from '../helpers/redis.js';
import { needTools } from '../helpers/tools.js';

const run = promisify(execFile);
const TOOLS = [...CEPH_TOOLS, 'haproxy', 'redis-server', 'skopeo', 'podman'];

async function tool(cmd: string, args: string[], env?: NodeJS.ProcessEnv): Promise<string> {
  try {
    return (await run(cmd, args, { timeout: 300_000, maxBuffer: 64 * MiB, env })).stdout;
  } catch (err) {
    const e = err as Error & { stderr?: string };
    throw new Error(`${cmd} ${args.join(' ')} failed: ${e.message}\n${e.stderr ?? ''}`);
  }
}

const skopeo = (...args: string[]) => tool('skopeo', args);

const needs = needTools(TOOLS, 'the load-balancer tests');

describe('berth instances behind HAProxy on one bucket (Ceph radosgw, Redis, PostgreSQL)', needs.skip ? needs : needPostgres(), () => {
  let ceph: CephS3;
  let redis: TestRedis;
  let postgres: TestPostgres;
  let metadata: { postgres: { url: string } };
  /** the instances' index, read straight from the database */
  let index: MetadataIndex;
  let rx: Receiver;
  let store: S3Driver;
  let work: string;
  const instances: BerthProcess[] = [];
  const balancers: Balancer[] = [];
  let params: Record<string, unknown>;

  const startInstance = async () => {
    const instance = await startBerthProcess({
      s3: params,
      config: {
        storage: { redirect: { disable: true } }, // every byte through the balancer
        redis: { addr: redis.addr },
        metadata,
        ratelimit: { rate: 10_000, burst: 10_000 },
        notifications: { endpoints: [{ name: 'rx', url: `${rx.url}/events`, timeout: '5s', threshold: 3, backoff: '100ms' }] },
      },
    });
    instances.push(instance);
    return instance;
  };
  const balance = async (over: BerthProcess[]) => {
    const balancer = await startHaproxy(over.map((i) => i.url));
    balancers.push(balancer);
    return balancer;
  };

  before(async () => {
    ceph = await startCeph();
    [redis, rx, postgres] = await Promise.all([startRedis(), startReceiver(), startPostgres()]);
    params = ceph.params(await ceph.createBucket('balanced'), { rootdirectory: '/lb', chunksize: 6 * MiB });
    metadata = { postgres: { url: await postgres.createDatabase('berth') } };
    const config = validateConfig({ version: '0.1', storage: { s3: params }, metadata }, 'test');
    store = new S3Driver(config.storage.s3!);
    index = await openMetadataIndex(config);
    work = await mkdtemp(join(tmpdir(), 'berth-haproxy-test-'));
  });
  after(async () => {
    for (const b of balancers) await b.stop().catch(() => undefined);
    await Promise.all(instances.map((i) => i.stop()));
    await store?.close();
    await index?.close();
    await Promise.all([redis?.stop(), rx?.close(), ceph?.stop(), postgres?.stop()]);
    if (work) await rm(work, { recursive: true, force: true });
  });

  /** a skopeo OCI layout of `layers` layers of the given sizes */
  const image = async (name: string, layers: number[]): Promise<ClientImage> => buildClientImage(join(work, name), { format: 'oci', layers });

  /** skopeo copy from an OCI layout to `ref` (docker://...) */
  const push = (img: ClientImage, ref: string, ...extra: string[]) => skopeo('copy', '--dest-tls-verify=false', '--retry-times', '3', ...extra, img.ref, ref);

  /** pulls `ref` into a fresh directory and checks every blob of `img` arrived intact */
  const pullAndCheck = async (ref: string, img: ClientImage) => {
    const dir = join(work, `pulled-${Math.random().toString(36).slice(2)}`);
    await skopeo('copy', '--src-tls-verify=false', '--preserve-digests', ref, `oci:${dir}:x`);
    for (const digest of img.blobs.keys()) {
      const bytes = await readFile(blobPath({ format: 'oci', dir }, digest));
      assert.equal(`sha256:${createHash('sha256').update(bytes).digest('hex')}`, digest);
    }
  };

  /** every blob in the store has the content its digest names */
  const assertStoreIntact = async () => {
    const root = '/docker/registry/v2/blobs/sha256';
    let checked = 0;
    for (const prefix of await store.list(root)) {
      for (const dir of await store.list(prefix)) {
        const hash = createHash('sha256');
        for await (const chunk of await store.reader(`${dir}/data`)) hash.update(chunk as Buffer);
        assert.equal(hash.digest('hex'), dir.split('/').at(-1), `${dir}/data`);
        checked++;
      }
    }
    return checked;
  };

  /** the index names `digest` for `repo:tag`, and the tag list through the balancer is the index's */
  const assertIndexed = async (lb: Balancer, repo: string, tag: string, digest: string) => {
    const rows = await index.readRepository(repo);
    assert.equal(rows?.tags.find((t) => t.name === tag)?.digest, digest, `${repo}:${tag} in the index`);
    assert.ok(rows?.manifests.some((m) => m.digest === digest), `${repo}@${digest} in the index`);
    const listed = (await (await fetch(`${lb.url}/v2/${repo}/tags/list`)).json()) as { tags: string[] };
    assert.deepEqual(listed.tags, rows?.tags.map((t) => t.name));
  };

  it('skopeo pushes and pulls an image of many layers through two instances; every instance notifies one receiver', { timeout: 300_000 }, async () => {
    const [a, b] = await Promise.all([startInstance(), startInstance()]);
    const lb = await balance([a, b]);
    const img = await image('many', [...Array.from({ length: 14 }, (_, i) => (i + 1) * 64 * 1024), 7 * MiB, 13 * MiB]);
    const ref = `docker://${new URL(lb.url).host}/lb/many:v1`;
    await push(img, ref);
    await pullAndCheck(ref, img);
    // pushes of 17 blobs and a manifest, round robin: events from both instances reach the receiver
    await rx.waitFor(() => new Set(rx.delivered().filter(isPushOf('lb/many')).map(instanceOf)).size === 2, 30_000, 'push events from both instances');
    const pushed = new Set(rx.delivered().filter(isPushOf('lb/many')).map((e) => (e.target as { digest: string }).digest));
    assert.ok(pushed.has(img.digest), 'the manifest push event');
    await assertIndexed(lb, 'lb/many', 'v1', img.digest);
  });

  it('the PATCHes of one chunked upload land on different instances and the blob is whole', { timeout: 120_000 }, async () => {
    const lb = balancers[0];
    const blob = new PatternBlob(23 * MiB + 3);
    const post = await fetch(`${lb.url}/v2/lb/chunked/blobs/uploads/`, { method: 'POST' });
    assert.equal(post.status, 202);
    let location = new URL(post.headers.get('location')!, lb.url).toString();
    const servedBy = new Set<string>();
    const cuts = [0, 3 * MiB, 9 * MiB, 14 * MiB, 20 * MiB, blob.size];
    for (let i = 0; i + 1 < cuts.length; i++) {
      const [start, end] = [cuts[i], cuts[i + 1]];
      const res = await streamRequest(location, {
        method: 'PATCH',
        headers: { 'content-type': 'application/octet-stream', 'content-length': end - start, 'content-range': `${start}-${end - 1}` },
        body: blob.chunks(start, end),
      });
      assert.equal(res.status, 202, res.body);
      assert.equal(res.headers.range, `0-${end - 1}`);
      servedBy.add(res.headers['x-served-by'] as string);
      location = new URL(res.headers.location as string, lb.url).toString();
    }
    assert.deepEqual([...servedBy].sort(), lb.serverNames);
    const put = new URL(location);
    put.searchParams.set('digest', blob.digest());
    const done = await fetch(put, { method: 'PUT' });
    assert.equal(done.status, 201, await done.text());
    const got = await fetch(`${lb.url}/v2/lb/chunked/blobs/${blob.digest()}`);
    assert.equal(got.status, 200);
    assert.equal(`sha256:${createHash('sha256').update(Buffer.from(await got.arrayBuffer())).digest('hex')}`, blob.digest());
  });

  it('podman pulls and pushes through three instances', { timeout: 300_000 }, async () => {
    const c = await startInstance();
    const lb = await balance([instances[0], instances[1], c]);
    const host = new URL(lb.url).host;
    const storage = ['--storage-driver', 'vfs', '--root', join(work, 'podman'), '--runroot', join(work, 'podman-run'), '--cgroup-manager', 'cgroupfs', '--events-backend', 'file'];
    await mkdir(join(work, 'tmp'), { recursive: true });
    const env = { ...process.env, TMPDIR: join(work, 'tmp') };
    const podman = (...args: string[]) => tool('podman', [...storage, ...args], env);
    await podman('pull', '--tls-verify=false', `${host}/lb/many:v1`);
    await podman('tag', `${host}/lb/many:v1`, `${host}/lb/copied:v2`);
    await podman('push', '--tls-verify=false', `${host}/lb/copied:v2`);
    const img = await image('again', [5 * 64 * 1024, 6 * MiB]);
    await push(img, `docker://${host}/lb/three:v1`);
    await pullAndCheck(`docker://${host}/lb/three:v1`, img);
    const manifest = await fetch(`${lb.url}/v2/lb/copied/manifests/v2`, { headers: { accept: 'application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json' } });
    assert.equal(manifest.status, 200);
    const layers = (JSON.parse(Buffer.from(await manifest.arrayBuffer()).toString()) as { layers: unknown[] }).layers;
    assert.equal(layers.length, 16);
    await rx.waitFor(() => new Set(rx.delivered().filter(isPushOf('lb/three')).map(instanceOf)).size >= 2, 30_000, 'push events of lb/three from several instances');
    await assertIndexed(lb, 'lb/three', 'v1', img.digest);
    await assertIndexed(lb, 'lb/copied', 'v2', manifest.headers.get('docker-content-digest')!);
  });

  it('an instance killed mid-push: the client retries through the balancer and succeeds, nothing corrupt is stored', { timeout: 300_000 }, async (t) => {
    const doomed = await startInstance();
    const lb = await balance([instances[0], instances[1], doomed]);
    const img = await image('killed', Array.from({ length: 6 }, (_, i) => 9 * MiB + i * 1024 * 1024));
    const ref = `docker://${new URL(lb.url).host}/lb/killed:v1`;
    const pushing = push(img, ref).then(
      () => undefined,
      (err: Error) => err,
    );
    // killed once it stored a layer of this push (skopeo sends several at once, so others are in flight)
    const port = new URL(doomed.url).port;
    await rx.waitFor(() => rx.delivered().some((e) => isPushOf('lb/killed')(e) && (e.source as { addr: string }).addr.endsWith(`:${port}`)), 120_000, 'a layer pushed through the doomed instance');
    await doomed.kill9();
    const first = await pushing;
    // skopeo retries what it counts as temporary; a copy that still failed is run again, as a user would
    t.diagnostic(first === undefined ? 'skopeo finished the push on its own (its retries)' : `skopeo failed once, run again: ${first.message.split('\n').slice(0, 3).join(' ')}`);
    if (first !== undefined) await push(img, ref);
    await pullAndCheck(ref, img);
    assert.ok((await assertStoreIntact()) >= img.blobs.size);
    // the manifest PUT that succeeded wrote the index after storage, whichever instance took it
    await assertIndexed(lb, 'lb/killed', 'v1', img.digest);
  });
});

type Event = Record<string, unknown>;
const isPushOf = (repo: string) => (e: Event) => e.action === 'push' && (e.target as { repository?: string }).repository === repo;
const instanceOf = (e: Event) => (e.source as { instanceID: string }).instanceID;
