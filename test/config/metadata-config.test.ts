/** The `metadata` block: which database, the errors naming the key, the password masked, a database that cannot be opened. */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ConfigError, maskSecrets, validateConfig } from '../../src/config/load.js';
import { metadataConnection, openMetadataIndex } from '../../src/features/metadata.js';
import { configProblems } from '../helpers/config.js';

const filesystem = { filesystem: { rootdirectory: '/srv/registry' } };
const config = (metadata: unknown, storage: unknown = filesystem) => validateConfig({ version: '0.1', storage, metadata }, 'test');

describe('metadata configuration', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'berth-metadata-config-'));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('is on without the block on the filesystem (SQLite beside docker/ in the root), off on other storage; on with an empty block', () => {
    const byDefault = validateConfig({ version: '0.1', storage: filesystem }, 'test');
    assert.deepEqual(byDefault.metadata, { enabled: true });
    assert.deepEqual(metadataConnection(byDefault), { sqlite: { path: '/srv/registry/berth/metadata.sqlite' } });
    for (const storage of [{ inmemory: {} }, { s3: { region: 'us-east-1', bucket: 'b' } }]) {
      assert.deepEqual(validateConfig({ version: '0.1', storage }, 'test').metadata, { enabled: false }, JSON.stringify(storage));
    }
    const on = config({});
    assert.equal(on.metadata?.enabled, true);
    assert.deepEqual(metadataConnection(on), { sqlite: { path: '/srv/registry/berth/metadata.sqlite' } });
    assert.deepEqual(metadataConnection(config({ sqlite: { path: '/var/lib/berth/index.db' } })), { sqlite: { path: '/var/lib/berth/index.db' } });
    assert.deepEqual(metadataConnection(config({ postgres: { url: 'postgres://berth@db:5432/berth' } })), { postgres: { url: 'postgres://berth@db:5432/berth' } });
    assert.equal(config({ enabled: false }).metadata?.enabled, false);
  });

  it('names the key of each mistake', () => {
    const problems = (metadata: unknown, storage?: unknown) => configProblems(() => config(metadata, storage)).join('\n');
    assert.match(problems({ sqlite: {}, postgres: { url: 'postgres://db/berth' } }), /^metadata: choose one engine: metadata.sqlite or metadata.postgres, not both/);
    assert.match(problems({ postgres: { url: 'mysql://db/berth' } }), /^metadata\.postgres\.url: expected a PostgreSQL connection URL/);
    assert.match(problems({ sqlite: { path: '' } }), /^metadata\.sqlite\.path: /);
    assert.match(problems({ sqlite: { file: 'x' } }), /metadata\.sqlite/);
    assert.match(problems({}, { inmemory: {} }), /^metadata\.sqlite\.path: set the file of the metadata database/);
    assert.match(problems({ reconcile: { interval: '0s' } }), /^metadata\.reconcile\.interval: expected a duration above 0/);
    assert.match(problems({ reconcile: { interval: 'soon' } }), /^metadata\.reconcile\.interval: expected a duration such as/);
  });

  it("takes the reconciler's interval as a duration (default 1m, filled in by the feature)", () => {
    assert.equal(config({ reconcile: { interval: '30s' } }).metadata?.reconcile?.interval, 30_000);
    assert.equal(config({}).metadata?.reconcile, undefined);
  });

  it("PostgreSQL's pool settings reach the connection; unset, open.ts's defaults apply; each mistake names its key", () => {
    const url = 'postgres://berth@db:5432/berth';
    assert.deepEqual(metadataConnection(config({ postgres: { url, poolsize: 4, connecttimeout: '2s', statementtimeout: '0s' } })), {
      postgres: { url, poolSize: 4, connectTimeoutMs: 2000, statementTimeoutMs: 0 },
    });
    const problems = (postgres: unknown) => configProblems(() => config({ postgres: { url, ...(postgres as object) } })).join('\n');
    assert.match(problems({ poolsize: 0 }), /^metadata\.postgres\.poolsize: /);
    assert.match(problems({ connecttimeout: '0s' }), /^metadata\.postgres\.connecttimeout: expected a duration above 0/);
    assert.match(problems({ statementtimeout: 'soon' }), /^metadata\.postgres\.statementtimeout: expected a duration/);
  });

  it('masks the password of the PostgreSQL URL wherever the configuration is shown', () => {
    const masked = maskSecrets(config({ postgres: { url: 'postgres://berth:hunter2@db:5432/berth' } })) as { metadata: { postgres: { url: string } } };
    assert.equal(masked.metadata.postgres.url, 'postgres://berth:********@db:5432/berth');
  });

  it('a database that cannot be opened stops start-up naming the key', async () => {
    const notADirectory = join(dir, 'file');
    await writeFile(notADirectory, 'x');
    await assert.rejects(openMetadataIndex(config({ sqlite: { path: join(notADirectory, 'index.sqlite') } })), (err: unknown) => {
      assert.ok(err instanceof ConfigError);
      assert.match(err.problems[0], /^metadata\.sqlite\.path: cannot open the metadata database: /);
      return true;
    });
    await assert.rejects(openMetadataIndex(config({ postgres: { url: 'postgres://berth@127.0.0.1:1/berth' } })), (err: unknown) => {
      assert.ok(err instanceof ConfigError);
      assert.match(err.problems[0], /^metadata\.postgres\.url: cannot open the metadata database: cannot connect/);
      return true;
    });
  });
});
