/**
 * The audit log's queries on both engines: a batch appended, filtered keyset pages newest and
 * oldest first (ties in time ordered by id), the retention's delete, and the policies'
 * fingerprint swapped by one writer only.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { AuditLog, type AuditRow } from '../../src/metadata/audit.js';
import { openDatabase, type MetadataConnection } from '../../src/metadata/open.js';
import { needPostgres, startPostgres, type TestPostgres } from '../helpers/postgres.js';

async function exercise(connection: MetadataConnection): Promise<void> {
  const { db } = await openDatabase(connection);
  try {
    const log = new AuditLog(db);
    const rows: AuditRow[] = [];
    for (let i = 0; i < 30; i++) {
      rows.push({ at: `2026-01-0${1 + (i % 3)}T00:00:00.000Z`, actor: i % 2 ? 'alice' : undefined, action: i % 5 ? 'push' : 'deny', repository: `team/r${i % 4}`, target: `t${i}`, outcome: 'ok', address: '127.0.0.1' });
    }
    await log.append(rows);
    const newest: string[] = [];
    let cursor;
    for (;;) {
      const page = await log.page({ action: 'push' }, { newest: true, cursor, limit: 7 });
      newest.push(...page.map((r) => r.target!));
      if (page.length < 7) break;
      cursor = { at: page[page.length - 1].at, id: page[page.length - 1].id };
    }
    const expected = rows.map((r, i) => ({ ...r, i })).filter((r) => r.action === 'push').sort((a, b) => (a.at === b.at ? b.i - a.i : a.at < b.at ? 1 : -1)).map((r) => r.target);
    assert.deepEqual(newest, expected);
    const alice = await log.page({ actor: 'alice', repository: 'team/r1', since: '2026-01-02T00:00:00.000Z' }, { newest: false, limit: 100 });
    assert.ok(alice.length > 0 && alice.every((r) => r.actor === 'alice' && r.repository === 'team/r1' && r.at >= '2026-01-02'));
    const anonymous = await log.page({}, { newest: false, limit: 1 });
    assert.equal(anonymous[0].actor, undefined);
    assert.equal(await log.prune('2026-01-02T00:00:00.000Z'), 10);
    assert.equal((await log.page({ until: '2026-01-02T00:00:00.000Z' }, { newest: false, limit: 100 })).length, 0);

    assert.equal(await log.policyState(), undefined);
    assert.equal(await log.swapPolicyState(undefined, 'one'), true);
    assert.equal(await log.swapPolicyState(undefined, 'other'), false, 'a second first writer');
    assert.equal(await log.swapPolicyState('one', 'two'), true);
    assert.equal(await log.swapPolicyState('one', 'three'), false, 'a stale previous value');
    assert.equal(await log.policyState(), 'two');
  } finally {
    await db.destroy();
  }
}

describe('audit log queries', () => {
  it('on SQLite', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'berth-audit-sqlite-'));
    try {
      await exercise({ sqlite: { path: join(dir, 'metadata.sqlite') } });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  describe('on PostgreSQL', needPostgres(), () => {
    let postgres: TestPostgres;
    before(async () => {
      postgres = await startPostgres();
    });
    after(() => postgres?.stop());
    it('the same', async () => {
      await exercise({ postgres: { url: await postgres.createDatabase('audit') } });
    });
  });
});
