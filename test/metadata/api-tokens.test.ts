/**
 * The API tokens' records (step 0007, src/metadata/api-tokens.ts) on both engines: a taken name
 * refused, reads by name and by owner, revocation once (and only by the owner when one is named),
 * and last uses that never move back.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { ApiTokenRecords, DuplicateTokenName, type ApiTokenRecord } from '../../src/metadata/api-tokens.js';
import { openDatabase, type MetadataConnection } from '../../src/metadata/open.js';
import { needPostgres, startPostgres, type TestPostgres } from '../helpers/postgres.js';

const token = (name: string, owner?: string): ApiTokenRecord => ({
  name,
  secretHash: 'x'.repeat(43),
  repositories: ['team/*'],
  actions: ['pull', 'push'],
  ...(owner ? { owner, ownerGroups: ['platform'] } : {}),
  created: '2026-11-26T00:00:00.000Z',
  expires: '2027-02-24T00:00:00.000Z',
});

let dir: string;
let pg: TestPostgres | undefined;

const engines: { name: string; options: { skip: string | false }; connection: () => Promise<MetadataConnection> }[] = [
  { name: 'SQLite', options: { skip: false }, connection: async () => ({ sqlite: { path: join(dir, 'tokens.sqlite') } }) },
  { name: 'PostgreSQL', options: needPostgres(), connection: async () => ({ postgres: { url: await (pg ??= await startPostgres()).createDatabase('tokens') } }) },
];

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'berth-token-records-'));
});
after(async () => {
  await pg?.stop();
  await rm(dir, { recursive: true, force: true });
});

for (const engine of engines) {
  describe(`API token records (${engine.name})`, engine.options, () => {
    it('creates, refuses a taken name, reads, lists by owner, revokes once, records last uses', async () => {
      const { db } = await openDatabase(await engine.connection());
      try {
        const records = new ApiTokenRecords(db);
        await records.create(token('ci'));
        await records.create(token('alice-ci', 'alice'));
        await assert.rejects(records.create(token('ci', 'alice')), DuplicateTokenName);
        assert.deepEqual(await records.get('ci'), token('ci'));
        assert.deepEqual(await records.get('alice-ci'), token('alice-ci', 'alice'));
        assert.equal(await records.get('nobody'), undefined);
        assert.deepEqual((await records.list()).map((t) => t.name), ['alice-ci', 'ci']);
        assert.deepEqual((await records.list('alice')).map((t) => t.name), ['alice-ci']);

        assert.equal(await records.revoke('alice-ci', '2026-11-27T00:00:00.000Z', 'bob'), false);
        assert.equal(await records.revoke('alice-ci', '2026-11-27T00:00:00.000Z', 'alice'), true);
        assert.equal(await records.revoke('alice-ci', '2026-11-28T00:00:00.000Z'), false);
        assert.equal((await records.get('alice-ci'))?.revoked, '2026-11-27T00:00:00.000Z');

        await records.recordUses(new Map([['ci', '2026-11-26T10:00:00.000Z']]));
        await records.recordUses(new Map([['ci', '2026-11-26T09:00:00.000Z']]));
        assert.equal((await records.get('ci'))?.lastUsed, '2026-11-26T10:00:00.000Z');
      } finally {
        await db.destroy();
      }
    });
  });
}
