/**
 * `berth verify --index` and `berth index rebuild` as commands, on both engines (SQLite and
 * PostgreSQL) on filesystem storage, and PostgreSQL on S3 (Ceph): every kind of difference verify compares
 * (a repository missing from either side, `_manifests` disagreeing, a manifest missing from either
 * side or a field of its record differing, a tag, blob links missing from either side or their
 * size) is reported on a line of its own, exit 1; `berth index rebuild` repairs the drift and keeps
 * the tags' history; verify then exits 0. `berth index rebuild` fills a database that was never
 * opened (the index turned on for an existing storage). With the index turned off both refuse.
 * (test/metadata/index.test.ts checks the rebuilt rows against the rows the pushes wrote.)
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { openMetadataIndex } from '../../src/features/metadata.js';
import type { MetadataIndex } from '../../src/metadata/metadata-index.js';
import { startBerth, type Overrides, type TestRegistry } from '../helpers/berth.js';
import { pushBlob } from '../helpers/blobs.js';
import { CEPH_TOOLS, stopSharedCeph } from '../helpers/ceph.js';
import { buildImage, pushImageOK } from '../helpers/images.js';
import { needPostgres, startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { needTools } from '../helpers/tools.js';

const run = promisify(execFile);
const CLI = join(import.meta.dirname, '../../src/cli.ts');
const GHOST = `sha256:${'0'.repeat(64)}`;

interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
}

async function berth(...args: string[]): Promise<Outcome> {
  try {
    const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', CLI, ...args], { timeout: 120_000, env: { ...process.env, AWS_CA_BUNDLE: '' } });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

let pg: TestPostgres | undefined;
let counter = 0;
let dir: string;

const ENGINES = [
  { name: 'SQLite', options: { skip: false as const }, fresh: async (): Promise<Overrides> => ({ sqlite: { path: join(dir, `index-${++counter}.sqlite`) } }) },
  { name: 'PostgreSQL', options: needPostgres(), fresh: async (): Promise<Overrides> => ({ postgres: { url: await pg!.createDatabase(`verify_${++counter}`) } }) },
];
const STORAGES = [
  { name: 'filesystem', driver: 'filesystem' as const, options: { skip: false as const } },
  { name: 'S3 (Ceph)', driver: 's3' as const, options: needTools(CEPH_TOOLS, 'berth verify --index on S3') },
];

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'berth-verify-index-'));
  if (!needPostgres().skip) pg = await startPostgres();
});
after(async () => {
  await pg?.stop();
  await stopSharedCeph();
  await rm(dir, { recursive: true, force: true });
});

for (const engine of ENGINES) {
  // S3 with PostgreSQL only: the several-instance deployment (each run of the command starts a process)
  for (const storage of STORAGES.filter((s) => s.driver === 'filesystem' || engine.name === 'PostgreSQL')) {
    describe(`berth verify --index and berth index rebuild: ${engine.name} on ${storage.name}`, engine.options.skip ? engine.options : storage.options, () => {
      const registries: TestRegistry[] = [];
      const indexes: MetadataIndex[] = [];
      after(async () => {
        for (const index of indexes) await index.close().catch(() => undefined);
        for (const registry of registries) await registry.stop().catch(() => undefined);
      });

      /** a registry with the index, its command configuration file, and the index opened by the test */
      const setUp = async () => {
        const metadata = await engine.fresh();
        const registry = await startBerth({ metadata }, { driver: storage.driver });
        registries.push(registry);
        const file = join(dir, `config-${++counter}.yml`);
        const storageBlock = registry.s3 ? { s3: registry.s3 } : { filesystem: { rootdirectory: registry.root } };
        await writeFile(file, stringify({ version: '0.1', log: { level: 'error' }, storage: storageBlock, metadata }));
        const index = await openMetadataIndex(registry.app.config);
        indexes.push(index);
        return { registry, file, index, metadata, storageBlock };
      };

      it('reports each kind of difference on a line of its own (exit 1); the rebuild repairs them and keeps the history (exit 0)', async () => {
        const { registry, file, index } = await setUp();
        const app = buildImage('oci-manifest', { annotations: { 'org.example.team': 'core' } });
        const web = buildImage('docker-v2');
        const lone = Buffer.from(`a blob of its own ${Math.random()}`) as Buffer<ArrayBuffer>;
        await pushImageOK(registry.url, 'team/app', app, 'v1');
        await pushImageOK(registry.url, 'team/web', web, 'latest');
        assert.equal((await pushBlob(registry.url, 'blobs-only', lone)).status, 201);
        assert.deepEqual(await berth('verify', '--index', file), { code: 0, stdout: 'the index matches storage\n', stderr: '' });
        const history = await index.tagHistory('team/app', 'v1');

        // the index drifts in every way verify compares
        const [record] = (await index.readRepository('team/app'))!.manifests;
        const [config, layer] = app.blobs;
        await index.dropRepository('team/web');
        await index.db.updateTable('repositories').set({ has_manifests: 1 }).where('name', '=', 'blobs-only').execute();
        await index.manifestStored({ ...record, digest: GHOST });
        await index.manifestStored({ ...record, labels: { changed: 'yes' } });
        await index.blobUnlinked('team/app', layer.digest);
        await index.blobLinked('team/app', config.digest, config.size + 1);
        await index.blobLinked('team/app', GHOST, 7);

        const drifted = await berth('verify', '--index', file);
        assert.equal(drifted.code, 1, drifted.stderr);
        const lines = drifted.stdout.trim().split('\n');
        assert.deepEqual(lines.slice(0, -1).sort(), [
          `blobs-only: has no _manifests in storage, the index says the opposite`,
          `team/app: blob ${GHOST} linked in the index, not in storage`,
          `team/app: blob ${config.digest} is ${config.size} bytes in storage, ${config.size + 1} in the index`,
          `team/app: blob ${layer.digest} linked in storage, not in the index`,
          `team/app@${GHOST}: manifest in the index, not in storage`,
          `team/app@${app.digest}: labels is ${JSON.stringify(record.labels)} in storage, {"changed":"yes"} in the index`,
          `team/web: in storage, not in the index`,
        ].sort()); // sorted as the lines are: the two blob lines' order is their random digests'
        assert.equal(lines.at(-1), '7 differences between the index and storage (berth index rebuild repairs them, except where a line says otherwise)');

        const rebuilt = await berth('index', 'rebuild', file);
        assert.equal(rebuilt.code, 0, rebuilt.stderr);
        assert.match(rebuilt.stdout, /^indexed 3 repositories, 2 manifests, 2 tags in [\d.]+ s \(\d+ manifests\/s\)\n$/);
        assert.deepEqual(await berth('verify', '--index', file), { code: 0, stdout: 'the index matches storage\n', stderr: '' });
        assert.deepEqual(await index.tagHistory('team/app', 'v1'), history);
        assert.deepEqual((await index.readRepository('team/web'))?.tags.map((t) => [t.name, t.digest]), [['latest', web.digest]]);
      });

      it('berth index rebuild fills a database never opened before (the index turned on for an existing storage)', async () => {
        const { registry, storageBlock } = await setUp();
        await pushImageOK(registry.url, 'old/app', buildImage('oci-index'), 'v1');
        const file = join(dir, `config-${++counter}.yml`);
        await writeFile(file, stringify({ version: '0.1', log: { level: 'error' }, storage: storageBlock, metadata: await engine.fresh() }));
        const before = await berth('verify', '--index', file);
        assert.equal(before.code, 1);
        assert.match(before.stdout, /^old\/app: in storage, not in the index$/m);
        const rebuilt = await berth('index', 'rebuild', file);
        assert.match(rebuilt.stdout, /^indexed 1 repositories, 3 manifests, 1 tags in /);
        assert.deepEqual(await berth('verify', '--index', file), { code: 0, stdout: 'the index matches storage\n', stderr: '' });
      });
    });
  }
}

describe('berth verify --index and berth index rebuild with the index turned off', () => {
  it('refuse with a line naming the block, exit 1', async () => {
    const file = join(dir, 'no-metadata.yml');
    await writeFile(file, stringify({ version: '0.1', storage: { filesystem: { rootdirectory: join(dir, 'plain') } }, metadata: { enabled: false } }));
    for (const args of [
      ['verify', '--index', file],
      ['index', 'rebuild', file],
    ]) {
      const { code, stdout, stderr } = await berth(...args);
      assert.equal(code, 1, args.join(' '));
      assert.equal(stdout, '');
      assert.match(stderr, /metadata: the configuration has no metadata index \(add a metadata block\)/);
    }
  });
});
