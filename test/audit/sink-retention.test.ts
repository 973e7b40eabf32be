/**
 * The audit sink's batching (nothing written per record; one batch a second, at once when BATCH
 * wait, at close; a failed write kept for the next) and retention: on a registry whose clock the
 * test moves, records older than audit.retention are deleted by the shared pass, younger kept.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { BATCH, BatchedAuditSink, FLUSH_MS } from '../../src/audit/sink.js';
import { AuditLog, type AuditRow } from '../../src/metadata/audit.js';
import { openDatabase } from '../../src/metadata/open.js';
import { startBerth } from '../helpers/berth.js';
import { buildImage, pushImageOK } from '../helpers/images.js';
import { ManualClock } from '../helpers/manual-clock.js';

describe('audit sink', () => {
  it('writes records in batches: after a second, at once when BATCH wait, at close', async () => {
    const clock = new ManualClock();
    const batches: AuditRow[][] = [];
    const sink = new BatchedAuditSink({ append: async (rows) => void batches.push([...rows]) }, clock);
    sink.record({ actor: 'alice', action: 'push', outcome: 'ok' });
    sink.record({ actor: undefined, action: 'sign-in', outcome: 'failed' });
    await clock.advance(FLUSH_MS - 1);
    assert.equal(batches.length, 0);
    await clock.advance(1);
    assert.equal(batches.length, 1);
    assert.deepEqual(batches[0].map((r) => [r.action, r.actor, r.at]), [
      ['push', 'alice', new Date(clock.now() - FLUSH_MS).toISOString()],
      ['sign-in', undefined, new Date(clock.now() - FLUSH_MS).toISOString()],
    ]);
    for (let i = 0; i < BATCH; i++) sink.record({ actor: 'bob', action: 'push', outcome: 'ok' });
    await clock.advance(0);
    assert.equal(batches.length, 2);
    assert.equal(batches[1].length, BATCH);
    sink.record({ actor: 'carol', action: 'delete', outcome: 'ok' });
    await sink.close();
    assert.deepEqual(batches[2].map((r) => r.actor), ['carol']);
  });

  it('keeps a batch whose write failed for the next flush, and never throws to the caller', async () => {
    const clock = new ManualClock();
    const written: AuditRow[] = [];
    let failing = true;
    const errors: unknown[] = [];
    const sink = new BatchedAuditSink(
      {
        append: async (rows) => {
          if (failing) throw new Error('database is locked');
          written.push(...rows);
        },
      },
      clock,
      (err) => errors.push(err),
    );
    sink.record({ actor: 'alice', action: 'push', outcome: 'ok' });
    await clock.advance(FLUSH_MS);
    assert.equal(errors.length, 1);
    assert.equal(written.length, 0);
    failing = false;
    sink.record({ actor: 'bob', action: 'push', outcome: 'ok' });
    await clock.advance(FLUSH_MS);
    assert.deepEqual(written.map((r) => r.actor), ['alice', 'bob']);
  });
});

describe('audit retention', () => {
  it('deletes the records older than audit.retention, keeps younger ones (one shared pass)', async () => {
    const clock = new ManualClock();
    const registry = await startBerth({ audit: { retention: '1h' } }, { clock });
    const { db } = await openDatabase({ sqlite: { path: join(registry.root!, 'berth/metadata.sqlite') } });
    const log = new AuditLog(db);
    try {
      const old = buildImage('docker-v2', { layers: 1 });
      await pushImageOK(registry.url, 'team/old', old, 'v1');
      await clock.advance(FLUSH_MS);
      const early = await log.page({ repository: 'team/old' }, { newest: false, limit: 100 });
      assert.ok(early.length > 0, 'the push was recorded');
      await clock.advance(90 * 60_000);
      const young = buildImage('docker-v2', { layers: 1 });
      await pushImageOK(registry.url, 'team/young', young, 'v1');
      await clock.advance(FLUSH_MS);
      // the next pass (at most an hour after the last) deletes what is past the hour
      await clock.advance(61 * 60_000);
      assert.deepEqual(await log.page({ repository: 'team/old' }, { newest: false, limit: 100 }), []);
      const kept = await log.page({ repository: 'team/young' }, { newest: false, limit: 100 });
      assert.equal(kept.filter((r) => r.target === 'v1').length, 1);
    } finally {
      await db.destroy();
      await registry.stop();
    }
  });

  it('refuses audit: without the metadata index, with a message that says what to do', async () => {
    await assert.rejects(startBerth({ audit: { enabled: true } }, { driver: 'inmemory' }), /audit: the audit log is kept in the metadata index's database, which is off/);
  });
});
