/**
 * The metadata index on both engines (SQLite in a temp dir; PostgreSQL on a private cluster):
 * writes reflected after each request, a rebuild from storage written without the index equal to
 * the index the writes built, `berth verify --index` finding planted differences, and a crash
 * between the storage write and the index write repaired by a rebuild.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { validateConfig } from '../../src/config/load.js';
import { openMetadataIndex } from '../../src/features/metadata.js';
import { RepositoryChangedError, type MetadataIndex } from '../../src/metadata/metadata-index.js';
import type { RepositoryFacts } from '../../src/metadata/records.js';
import { readRepositoryFacts } from '../../src/registry/indexing/facts.js';
import { rebuildIndex } from '../../src/registry/indexing/rebuild.js';
import { verifyIndex } from '../../src/registry/indexing/verify-index.js';
import { FilesystemDriver } from '../../src/storage/filesystem.js';
import { startBerth, type Overrides, type TestRegistry } from '../helpers/berth.js';
import { basic, writeHtpasswd } from '../helpers/auth.js';
import { pushBlob } from '../helpers/blobs.js';
import { crashedPush } from '../helpers/crashed-push.js';
import { buildImage, pushImageOK, putManifest, type Image } from '../helpers/images.js';
import { needPostgres, startPostgres, type TestPostgres } from '../helpers/postgres.js';

const run = promisify(execFile);
const CLI = join(import.meta.dirname, '../../src/cli.ts');

interface Engine {
  name: string;
  options: { skip: string | false };
  /** a fresh, empty database: the `metadata` block naming it */
  fresh(): Promise<Overrides>;
  start?(): Promise<void>;
  stop?(): Promise<void>;
}

let dir: string;
let counter = 0;
let pg: TestPostgres | undefined;

const ENGINES: Engine[] = [
  { name: 'SQLite', options: { skip: false }, fresh: async () => ({ sqlite: { path: join(dir, `index-${++counter}.sqlite`) } }) },
  {
    name: 'PostgreSQL',
    options: needPostgres(),
    fresh: async () => ({ postgres: { url: await pg!.createDatabase(`index_${++counter}`) } }),
    start: async () => {
      pg = await startPostgres();
    },
    stop: async () => {
      await pg?.stop();
      pg = undefined;
    },
  },
];

/** a registry's contents for the tests: a tagged image, a tag moved, an index with its children, an artifact with a subject, a blob alone */
async function pushSample(url: string, images: { app: Image; app2: Image; multi: Image; sbom: Image; lone: Buffer<ArrayBuffer> }): Promise<void> {
  await pushImageOK(url, 'team/app', images.app, 'v1');
  await pushImageOK(url, 'team/app', images.app, 'stable');
  await pushImageOK(url, 'team/app', images.app2, 'v1'); // moves v1
  await pushImageOK(url, 'team/multi', images.multi, 'latest');
  await pushImageOK(url, 'team/app', images.sbom);
  assert.equal((await pushBlob(url, 'blobs-only', images.lone)).status, 201);
}

function sampleImages() {
  const app = buildImage('oci-manifest', { annotations: { 'org.example.team': 'core' } });
  return {
    app,
    app2: buildImage('docker-v2'),
    multi: buildImage('oci-index'),
    sbom: buildImage('oci-artifact', { subject: app }),
    lone: Buffer.from(`a blob of its own ${Math.random()}`) as Buffer<ArrayBuffer>,
  };
}

/** the rows without the times of pushes (a rebuild reads them from storage, which has other ones) */
function withoutTimes(facts: RepositoryFacts | undefined) {
  assert.ok(facts);
  return { ...facts, manifests: facts.manifests.map(({ pushed: _, ...m }) => m), tags: facts.tags.map(({ pushed: _, ...t }) => t) };
}

async function indexOf(registry: TestRegistry): Promise<MetadataIndex> {
  return openMetadataIndex(registry.app.config);
}

for (const engine of ENGINES) {
  describe(`the metadata index on ${engine.name}`, engine.options, () => {
    const registries: TestRegistry[] = [];
    const indexes: MetadataIndex[] = [];
    before(async () => {
      dir = await mkdtemp(join(tmpdir(), 'berth-metadata-'));
      await engine.start?.();
    });
    after(async () => {
      for (const index of indexes) await index.close().catch(() => undefined);
      for (const registry of registries) await registry.stop().catch(() => undefined);
      await engine.stop?.();
      await rm(dir, { recursive: true, force: true });
    });
    const start = async (overrides: Overrides = {}) => {
      const registry = await startBerth(overrides);
      registries.push(registry);
      return registry;
    };
    const open = async (registry: TestRegistry) => {
      const index = await indexOf(registry);
      indexes.push(index);
      return index;
    };

    it('records a push with its tags, a tag move, a manifest delete and a blob delete, in the same request', async () => {
      const registry = await start({ metadata: await engine.fresh() });
      const index = await open(registry);
      const image = buildImage('docker-v2');
      const other = buildImage('oci-manifest', { annotations: { 'org.example.owner': 'ops' } });
      await pushImageOK(registry.url, 'library/web', image, 'v1');

      let rows = await index.readRepository('library/web');
      assert.ok(rows);
      assert.equal(rows.hasManifests, true);
      assert.deepEqual(
        rows.manifests.map(({ pushed: _, ...m }) => m),
        [
          {
            repository: 'library/web',
            digest: image.digest,
            mediaType: image.mediaType,
            size: image.body.length,
            configDigest: image.blobs[0].digest,
            platforms: [{ os: 'linux', architecture: 'amd64' }],
            labels: { 'org.opencontainers.image.title': 'berth test image', 'org.opencontainers.image.version': 'amd64' },
            annotations: {},
            subject: null,
            imageSize: image.blobs.reduce((total, b) => total + b.size, 0),
            created: JSON.parse(image.blobs[0].data.toString()).created,
          },
        ],
      );
      assert.deepEqual(rows.tags.map((t) => [t.name, t.digest]), [['v1', image.digest]]);
      assert.deepEqual(rows.blobs, [...image.blobs].map((b) => ({ digest: b.digest, size: b.size })).sort((a, b) => (a.digest < b.digest ? -1 : 1)));

      // the tag moves: its history closes the first entry and opens one for the new digest
      await pushImageOK(registry.url, 'library/web', other, 'v1');
      rows = await index.readRepository('library/web');
      assert.deepEqual(rows?.tags.map((t) => [t.name, t.digest]), [['v1', other.digest]]);
      assert.deepEqual(rows?.manifests.find((m) => m.digest === other.digest)?.annotations, { 'org.example.owner': 'ops' });
      let history = await index.tagHistory('library/web', 'v1');
      assert.deepEqual(history.map((h) => [h.digest, h.to === null]), [[image.digest, false], [other.digest, true]]);

      // a manifest deleted: its tags go with it, their history is closed
      assert.equal((await fetch(`${registry.url}/v2/library/web/manifests/${other.digest}`, { method: 'DELETE' })).status, 202);
      rows = await index.readRepository('library/web');
      assert.deepEqual(rows?.manifests.map((m) => m.digest), [image.digest]);
      assert.deepEqual(rows?.tags, []);
      history = await index.tagHistory('library/web', 'v1');
      assert.ok(history.every((h) => h.to !== null));

      // a blob link deleted
      const layer = image.blobs[1].digest;
      assert.equal((await fetch(`${registry.url}/v2/library/web/blobs/${layer}`, { method: 'DELETE' })).status, 202);
      rows = await index.readRepository('library/web');
      assert.ok(!rows?.blobs.some((b) => b.digest === layer));

      // a mount links the blob in the target repository
      const config = image.blobs[0];
      const mount = await fetch(`${registry.url}/v2/other/repo/blobs/uploads/?mount=${config.digest}&from=library/web`, { method: 'POST' });
      assert.equal(mount.status, 201);
      assert.deepEqual((await index.readRepository('other/repo'))?.blobs, [{ digest: config.digest, size: config.size }]);
      assert.equal((await index.readRepository('other/repo'))?.hasManifests, false);
      assert.equal(await verifyIndex(registry.app.driver, index, () => undefined), 0);
    });

    it('records a manifest PUT with its tags as one write, and counts a blob link deleted as a write', async () => {
      const registry = await start({ metadata: await engine.fresh() });
      const index = await open(registry);
      const image = buildImage('oci-manifest');
      await pushImageOK(registry.url, 'one/write', image, 'v1');
      const before = await index.changesOf('one/write');
      // by digest with two ?tag= parameters: the manifest and both tags in one transaction (one write counted)
      const put = await putManifest(registry.url, 'one/write', `${image.digest}?tag=a&tag=b`, image.body, image.mediaType);
      assert.equal(put.status, 201);
      assert.equal(await index.changesOf('one/write'), before + 1);
      assert.deepEqual((await index.readRepository('one/write'))?.tags.map((t) => [t.name, t.digest]), [['a', image.digest], ['b', image.digest], ['v1', image.digest]]);
      assert.deepEqual((await index.tagHistory('one/write', 'a')).map((h) => [h.digest, h.to]), [[image.digest, null]]);

      // a rebuild's read of storage from before a blob link was deleted must not put the link back
      const facts = await readRepositoryFacts(registry.app.driver, 'one/write');
      const changes = await index.changesOf('one/write');
      const layer = image.blobs[1].digest;
      assert.equal((await fetch(`${registry.url}/v2/one/write/blobs/${layer}`, { method: 'DELETE' })).status, 202);
      assert.equal(await index.changesOf('one/write'), changes + 1);
      await assert.rejects(index.replaceRepository(facts, facts.hasManifests, changes), RepositoryChangedError);
      assert.ok(!(await index.readRepository('one/write'))?.blobs.some((b) => b.digest === layer));
    });

    it("a rebuild's batch writes the repositories nobody wrote to and leaves the one the request path wrote to since its read", async () => {
      const root = await mkdtemp(join(dir, 'batch-'));
      const index = await openMetadataIndex(validateConfig({ version: '0.1', storage: { filesystem: { rootdirectory: root } }, metadata: await engine.fresh() }, 'test'));
      indexes.push(index);
      const digest = (n: number) => `sha256:${String(n).repeat(64)}`;
      const pushed = '2026-01-01T00:00:00.000Z';
      const facts = (name: string): RepositoryFacts => ({
        name,
        manifests: [{ repository: name, digest: digest(1), mediaType: 'application/vnd.oci.image.manifest.v1+json', size: 100, configDigest: digest(2), platforms: [], labels: {}, annotations: {}, subject: null, pushed, imageSize: 300, created: null }],
        tags: [{ name: 'v1', digest: digest(1), pushed }],
        blobs: [{ digest: digest(2), size: 200 }],
      });
      // read from storage before the push of b/app:other; the rebuild writes after it
      const batch = ['a/app', 'b/app', 'c/app'].map((name) => ({ facts: facts(name), hasManifests: true, expectChanges: 0 }));
      await index.tagMoved('b/app', 'other', digest(3));
      assert.deepEqual(await index.replaceRepositories(batch), ['b/app']);
      for (const name of ['a/app', 'c/app']) assert.deepEqual(await index.readRepository(name), { hasManifests: true, ...facts(name) }, name);
      assert.deepEqual((await index.readRepository('b/app'))?.tags.map((t) => t.name), ['other']);
      assert.deepEqual((await index.readRepository('b/app'))?.manifests, []);
      // read again with its count, b/app is written too (its tag that storage does not have goes)
      assert.deepEqual(await index.replaceRepositories([{ facts: facts('b/app'), hasManifests: true, expectChanges: 1 }]), []);
      assert.deepEqual(await index.readRepository('b/app'), { hasManifests: true, ...facts('b/app') });
    });

    it("records who moved a tag in the tag's history", async () => {
      const htpasswd = join(dir, `htpasswd-${++counter}`);
      await writeHtpasswd(htpasswd, { alice: 'alice-pw' });
      const registry = await start({ metadata: await engine.fresh(), auth: { htpasswd: { realm: 'test', path: htpasswd } } });
      const index = await open(registry);
      const headers = { authorization: basic('alice', 'alice-pw') };
      const image = buildImage('oci-manifest');
      for (const blob of image.blobs) {
        const res = await fetch(`${registry.url}/v2/team/signed/blobs/uploads/?digest=${blob.digest}`, { method: 'POST', body: blob.data, headers: { ...headers, 'content-type': 'application/octet-stream' } });
        assert.equal(res.status, 201);
      }
      const res = await fetch(`${registry.url}/v2/team/signed/manifests/v1`, { method: 'PUT', body: image.body, headers: { ...headers, 'content-type': image.mediaType } });
      assert.equal(res.status, 201);
      assert.deepEqual((await index.tagHistory('team/signed', 'v1')).map((h) => [h.digest, h.pushedBy]), [[image.digest, 'alice']]);
    });

    it('rebuilt from storage written without the index, holds what the writes recorded; verify --index finds no difference', async () => {
      const images = sampleImages();
      const indexed = await start({ metadata: await engine.fresh() });
      const plain = await start();
      await pushSample(indexed.url, images);
      await pushSample(plain.url, images);

      const written = await open(indexed);
      const rebuiltBlock = await engine.fresh();
      const rebuilt = await openMetadataIndex(validateConfig({ version: '0.1', storage: { filesystem: { rootdirectory: plain.root } }, metadata: rebuiltBlock }, 'test'));
      indexes.push(rebuilt);
      const summary = await rebuildIndex(plain.app.driver, rebuilt);
      assert.equal(summary.repositories, 3);
      assert.equal(summary.manifests, 3 + 3); // app, app2, sbom; the index and its two children

      assert.deepEqual(await rebuilt.repositoryNames(), await written.repositoryNames());
      for (const name of await written.repositoryNames()) {
        assert.deepEqual(withoutTimes(await rebuilt.readRepository(name)), withoutTimes(await written.readRepository(name)), name);
      }
      // a rebuild of what the index already holds changes nothing, and the tag's history stays
      const history = await written.tagHistory('team/app', 'v1');
      await rebuildIndex(indexed.app.driver, written);
      assert.deepEqual(await written.tagHistory('team/app', 'v1'), history);
      assert.equal(await verifyIndex(indexed.app.driver, written, () => undefined), 0);
      assert.ok(await written.state('rebuilt'));
    });

    it('berth verify --index reports every planted difference and exits 1; berth index rebuild repairs them', async () => {
      const images = sampleImages();
      const registry = await start({ metadata: await engine.fresh() });
      await pushSample(registry.url, images);
      const file = join(dir, `config-${++counter}.yml`);
      await writeFile(file, stringify({ version: '0.1', log: { level: 'error' }, storage: { filesystem: { rootdirectory: registry.root } }, metadata: registry.app.config.metadata }));
      const verify = () => run(process.execPath, ['--import', 'tsx', CLI, 'verify', '--index', file]).then(
        ({ stdout }) => ({ code: 0, stdout }),
        (err: { code: number; stdout: string }) => ({ code: err.code, stdout: err.stdout }),
      );
      assert.deepEqual(await verify(), { code: 0, stdout: 'the index matches storage\n' });

      // storage changed behind the index's back: a tag removed, a tag moved; and a row storage never had
      await rm(join(registry.root!, 'docker/registry/v2/repositories/team/app/_manifests/tags/stable'), { recursive: true });
      await registry.app.driver.putContent('/docker/registry/v2/repositories/team/multi/_manifests/tags/latest/current/link', Buffer.from(images.multi.children[0].digest));
      const index = await open(registry);
      await index.tagMoved('ghost/repo', 'v0', `sha256:${'0'.repeat(64)}`);

      const { code, stdout } = await verify();
      assert.equal(code, 1);
      const lines = stdout.trim().split('\n');
      assert.deepEqual(lines.slice(0, -1).sort(), [
        `ghost/repo: in the index, not in storage`,
        `team/app:stable: tag in the index (${images.app.digest}), not in storage`,
        `team/multi:latest: names ${images.multi.children[0].digest} in storage, ${images.multi.digest} in the index`,
      ]);
      assert.equal(lines.at(-1), '3 differences between the index and storage (berth index rebuild repairs them, except where a line says otherwise)');

      const rebuild = await run(process.execPath, ['--import', 'tsx', CLI, 'index', 'rebuild', file]);
      assert.match(rebuild.stdout, /^indexed 3 repositories, 6 manifests, 2 tags in [\d.]+ s \(\d+ manifests\/s\); dropped 1 repositories storage no longer has\n$/);
      assert.deepEqual(await verify(), { code: 0, stdout: 'the index matches storage\n' });
    });

    it('a crash between the storage write and the index write leaves a difference that a rebuild repairs', async () => {
      const root = await mkdtemp(join(dir, 'crash-'));
      const driver = new FilesystemDriver({ rootdirectory: root });
      const index = await openMetadataIndex(validateConfig({ version: '0.1', storage: { filesystem: { rootdirectory: root } }, metadata: await engine.fresh() }, 'test'));
      indexes.push(index);
      // the process "dies" right after storage took the manifest and the tag: the index is never told
      const { image } = await crashedPush(driver, index, 'crash/app', 'v1');
      assert.deepEqual((await index.readRepository('crash/app'))?.manifests, []);

      const differences: string[] = [];
      assert.equal(await verifyIndex(driver, index, (line) => differences.push(line)), 3);
      assert.deepEqual(differences.sort(), [
        'crash/app: has _manifests in storage, the index says the opposite',
        `crash/app:v1: tag in storage (${image.digest}), not in the index`,
        `crash/app@${image.digest}: manifest in storage, not in the index`,
      ]);
      await rebuildIndex(driver, index);
      assert.equal(await verifyIndex(driver, index, () => undefined), 0);
      assert.deepEqual((await index.readRepository('crash/app'))?.manifests.map((m) => m.digest), [image.digest]);
    });
  });
}

