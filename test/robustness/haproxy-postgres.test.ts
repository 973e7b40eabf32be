/**
 * Two berth instances on one storage (one filesystem root; one Ceph bucket) and one PostgreSQL
 * database for the index (`metadata: {postgres: {url}}`), behind HAProxy (round robin per
 * request, no stickiness): what one instance pushes or deletes, the other and the balancer answer
 * at once, with no wait and no retry; `_catalog`, `tags/list`, the manifest and the index's rows
 * (read straight from the database) agree after every step, and `verify --index` finds nothing.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { openMetadataIndex } from '../../src/features/metadata.js';
import type { MetadataIndex } from '../../src/metadata/metadata-index.js';
import { verifyIndex } from '../../src/registry/indexing/verify-index.js';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { CEPH_TOOLS, stopSharedCeph } from '../helpers/ceph.js';
import { startHaproxy, type Balancer } from '../helpers/haproxy.js';
import { buildImage, pushImageOK } from '../helpers/images.js';
import { needPostgres, startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { needTools } from '../helpers/tools.js';

const STORAGES = [
  { name: 'one filesystem root', driver: 'filesystem' as const, tools: ['haproxy'] },
  { name: 'one Ceph bucket', driver: 's3' as const, tools: ['haproxy', ...CEPH_TOOLS] },
];

after(() => stopSharedCeph());

for (const storage of STORAGES) {
  const needs = needTools(storage.tools, 'two instances behind HAProxy');
  const options = needs.skip ? needs : needPostgres();
  describe(`two berth instances on ${storage.name} and one PostgreSQL, behind HAProxy`, options, () => {
    let postgres: TestPostgres;
    let a: TestRegistry;
    let b: TestRegistry;
    let lb: Balancer;
    let index: MetadataIndex;
    const registries: TestRegistry[] = [];

    before(async () => {
      postgres = await startPostgres();
      const metadata = { postgres: { url: await postgres.createDatabase('berth') } };
      a = await startBerth({ metadata }, { driver: storage.driver });
      registries.push(a);
      // the second on the first's storage; both migrate the database, the second finds it done
      b = await startBerth({ metadata }, { driver: storage.driver, root: a.root, s3: a.s3 });
      registries.push(b);
      lb = await startHaproxy([a.url, b.url]);
      index = await openMetadataIndex(a.app.config);
    });
    after(async () => {
      await lb?.stop();
      await index?.close();
      // b first: a owns the filesystem root
      for (const registry of registries.reverse()) await registry.stop().catch(() => undefined);
      await postgres?.stop();
    });

    const get = async (base: string, path: string) => {
      const res = await fetch(`${base}${path}`);
      return { status: res.status, body: res.status === 200 ? await res.json() : undefined, servedBy: res.headers.get('x-served-by') };
    };

    /** `_catalog` and `tags/list` through A, B and (twice: once per instance) HAProxy: the same answer each time */
    const answers = async (repository: string) => {
      const seen = new Set<string | null>();
      const catalogs: unknown[] = [];
      const tagLists: unknown[] = [];
      for (const base of [a.url, b.url, lb.url, lb.url]) {
        const catalog = await get(base, '/v2/_catalog');
        const tags = await get(base, `/v2/${repository}/tags/list`);
        catalogs.push(catalog.body);
        tagLists.push([tags.status, tags.body]);
        if (base === lb.url) seen.add(catalog.servedBy).add(tags.servedBy);
      }
      for (const other of catalogs.slice(1)) assert.deepEqual(other, catalogs[0]);
      for (const other of tagLists.slice(1)) assert.deepEqual(other, tagLists[0]);
      assert.deepEqual([...seen].sort(), lb.serverNames, 'HAProxy sent requests to both instances');
      return { catalog: catalogs[0] as { repositories: string[] }, tags: tagLists[0] as [number, { name: string; tags: string[] } | undefined] };
    };

    it("a push through A is in B's and HAProxy's answers and in the index at once; a delete through B is gone through A at once", async () => {
      const app = buildImage('oci-manifest');
      const web = buildImage('docker-v2');
      await pushImageOK(a.url, 'team/app', app, 'v1');
      await pushImageOK(a.url, 'team/app', app, 'stable');
      await pushImageOK(a.url, 'team/web', web, 'latest');

      let seen = await answers('team/app');
      assert.deepEqual(seen.catalog.repositories, ['team/app', 'team/web']);
      assert.deepEqual(seen.tags, [200, { name: 'team/app', tags: ['stable', 'v1'] }]);
      for (const base of [b.url, lb.url]) assert.equal((await fetch(`${base}/v2/team/app/manifests/v1`, { method: 'HEAD' })).headers.get('docker-content-digest'), app.digest);
      assert.deepEqual(await index.repositoryNames(), ['team/app', 'team/web']);
      assert.deepEqual((await index.readRepository('team/app'))?.tags.map((t) => [t.name, t.digest]), [
        ['stable', app.digest],
        ['v1', app.digest],
      ]);

      // a tag moved through B: A and the index name the new digest at once
      const app2 = buildImage('oci-manifest');
      await pushImageOK(b.url, 'team/app', app2, 'v1');
      assert.equal((await fetch(`${a.url}/v2/team/app/manifests/v1`, { method: 'HEAD' })).headers.get('docker-content-digest'), app2.digest);
      assert.deepEqual((await index.readRepository('team/app'))?.tags.map((t) => [t.name, t.digest]), [
        ['stable', app.digest],
        ['v1', app2.digest],
      ]);

      // deletes through B: the manifest `stable` still names (v1 moved off it), and a repository's only manifest
      assert.equal((await fetch(`${b.url}/v2/team/app/manifests/${app.digest}`, { method: 'DELETE' })).status, 202);
      assert.equal((await fetch(`${b.url}/v2/team/web/manifests/${web.digest}`, { method: 'DELETE' })).status, 202);
      for (const base of [a.url, lb.url, lb.url]) {
        assert.equal((await fetch(`${base}/v2/team/app/manifests/stable`, { method: 'HEAD' })).status, 404, base);
        assert.equal((await fetch(`${base}/v2/team/app/manifests/${app.digest}`, { method: 'HEAD' })).status, 404, base);
        assert.equal((await fetch(`${base}/v2/team/web/manifests/latest`, { method: 'HEAD' })).status, 404, base);
        assert.equal((await fetch(`${base}/v2/team/web/manifests/${web.digest}`, { method: 'HEAD' })).status, 404, base);
      }
      seen = await answers('team/app');
      assert.deepEqual(seen.tags, [200, { name: 'team/app', tags: ['v1'] }]);
      const web404 = await answers('team/web');
      const appRows = await index.readRepository('team/app');
      assert.deepEqual([appRows?.manifests.map((m) => m.digest), appRows?.tags.map((t) => t.name)], [[app2.digest], ['v1']]);
      const webRows = await index.readRepository('team/web');
      assert.deepEqual([webRows?.manifests, webRows?.tags], [[], []]);
      // the catalog still lists team/web (its directory stays in storage, as in Distribution); the index agrees
      assert.deepEqual(web404.catalog.repositories, await index.repositoryNames());

      assert.equal(await verifyIndex(a.app.driver, index, (line) => assert.fail(line)), 0);
    });

    it('pushes through HAProxy land on both instances; every one of them is in the index', async () => {
      const images = Array.from({ length: 4 }, () => buildImage('oci-manifest'));
      for (const [i, image] of images.entries()) await pushImageOK(lb.url, 'team/balanced', image, `t${i}`);
      const rows = await index.readRepository('team/balanced');
      assert.deepEqual(
        rows?.tags.map((t) => [t.name, t.digest]),
        images.map((image, i) => [`t${i}`, image.digest]),
      );
      assert.deepEqual((await answers('team/balanced')).tags, [200, { name: 'team/balanced', tags: ['t0', 't1', 't2', 't3'] }]);
      assert.equal(await verifyIndex(b.app.driver, index, (line) => assert.fail(line)), 0);
    });
  });
}
