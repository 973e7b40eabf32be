/**
 * The soak's model of what must be served (ledger.ts): everything acknowledged and not deleted,
 * except what the retention policy of `ret/**` may remove, and nothing more.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Checker } from './checker.js';
import { RETENTION, type SoakCluster } from './cluster.js';
import { FaultInjector } from './faults.js';
import { Ledger, SLACK_MS, type ManifestRecord } from './ledger.js';
import { Random } from './random.js';
import type { Reply, Wire } from './wire.js';

const T = RETENTION.tagsOlderThanMs;
const U = RETENTION.untaggedOlderThanMs;

function push(ledger: Ledger, repo: string, digest: string, at: number, extra: { tag?: string; children?: string[]; subject?: string } = {}): ManifestRecord {
  return ledger.pushed({ repo, digest, mediaType: 'm', body: Buffer.from(digest), blobs: [], children: extra.children ?? [], subject: extra.subject, child: false, owner: 0 }, at, extra.tag);
}

describe('soak ledger: what the registry must still serve', () => {
  it('outside the policy, every acknowledged manifest until a delete is sent, and again after a new push', () => {
    const ledger = new Ledger();
    const rec = push(ledger, 'soak/a', 'sha256:a', 0, { tag: 't' });
    assert.equal(ledger.protectedAt(rec, 10 * T), true);
    ledger.deleting(rec);
    assert.equal(ledger.protectedAt(rec, 10 * T), false);
    assert.equal(ledger.tagProtected(ledger.tags.get('soak/a@t')!, 10 * T), false);
    push(ledger, 'soak/a', 'sha256:a', 11 * T);
    assert.equal(ledger.protectedAt(rec, 20 * T), true);
  });

  it('under the policy, an untagged manifest while younger than untaggedolderthan (less the slack)', () => {
    const ledger = new Ledger();
    const rec = push(ledger, 'ret/a', 'sha256:a', 1000);
    assert.equal(ledger.protectedAt(rec, 1000 + U - SLACK_MS - 1), true);
    assert.equal(ledger.protectedAt(rec, 1000 + U - SLACK_MS), false);
  });

  it('under the policy, a tagged manifest while its tag is younger than tagsolderthan, or kept by name', () => {
    const ledger = new Ledger();
    const young = push(ledger, 'ret/a', 'sha256:a', 0, { tag: 'c0-1' });
    const kept = push(ledger, 'ret/a', 'sha256:b', 0, { tag: 'keep-c0-2' });
    assert.equal(ledger.protectedAt(young, T - SLACK_MS - 1), true);
    assert.equal(ledger.protectedAt(young, T), false);
    assert.equal(ledger.protectedAt(kept, 100 * T), true);
    // a new push of the tag starts its time again
    push(ledger, 'ret/a', 'sha256:a', T, { tag: 'c0-1' });
    assert.equal(ledger.protectedAt(young, 2 * T - SLACK_MS - 1), true);
    // and so does a push of its manifest under another tag: the tag's time is its manifest's
    push(ledger, 'ret/a', 'sha256:a', 2 * T, { tag: 'c0-3' });
    assert.equal(ledger.tagProtected(ledger.tags.get('ret/a@c0-1')!, 3 * T - SLACK_MS - 1), true);
    assert.equal(ledger.tagProtected(ledger.tags.get('ret/a@c0-1')!, 3 * T), false);
  });

  it("under the policy, an index's children and the referrers of reached manifests follow the tag; a moved tag leaves its old manifest to untaggedolderthan", () => {
    const ledger = new Ledger();
    const child = push(ledger, 'ret/a', 'sha256:c', 0);
    push(ledger, 'ret/a', 'sha256:i', 0, { tag: 'keep-x', children: ['sha256:c'] });
    const referrer = push(ledger, 'ret/a', 'sha256:r', 0, { subject: 'sha256:c' });
    const other = push(ledger, 'ret/b', 'sha256:c', 0);
    const moved = push(ledger, 'ret/a', 'sha256:m', 0, { tag: 'keep-y' });
    push(ledger, 'ret/a', 'sha256:n', 0, { tag: 'keep-y' });
    const late = 10 * T;
    assert.equal(ledger.protectedAt(child, late), true);
    assert.equal(ledger.protectedAt(referrer, late), true);
    assert.equal(ledger.protectedAt(other, late), false, 'another repository is another graph');
    assert.equal(ledger.protectedAt(moved, late), false);
  });

  it('under the policy, a manifest once unprotected stays lost to a later tag on its subject; a push of it or of its index brings it back', () => {
    // the soak's two LOST ret/b manifests: index i tagged c0-1, its referrer r; the tag expires, retention
    // deletes i (parents first); a keep-* tag-again of i re-writes it and its checked children, but r,
    // untagged and old before that tag, goes in the same pass
    const ledger = new Ledger();
    const child = push(ledger, 'ret/a', 'sha256:c', 0);
    push(ledger, 'ret/a', 'sha256:i', 0, { tag: 'c0-1', children: ['sha256:c'] });
    const referrer = push(ledger, 'ret/a', 'sha256:r', 0, { subject: 'sha256:i' });
    const lapsedAt = T + U;
    assert.equal(ledger.protectedAt(referrer, lapsedAt), false);
    push(ledger, 'ret/a', 'sha256:i', lapsedAt, { tag: 'keep-c0-2', children: ['sha256:c'] });
    assert.equal(ledger.protectedAt(referrer, lapsedAt + 1), false, 'the new tag does not bring back what may be gone');
    assert.equal(ledger.protectedAt(child, 10 * T), true, 'the index push found its child there');
    push(ledger, 'ret/a', 'sha256:r', 20 * T, { subject: 'sha256:i' });
    assert.equal(ledger.protectedAt(referrer, 30 * T), true, 'pushed again, it is reached by the keep tag');
    assert.equal(ledger.protection(referrer, 30 * T), 'reached from tag keep-c0-2 > referrer of i');
    // while still protected when the tag comes, it stays protected
    const young = push(ledger, 'ret/a', 'sha256:r2', 40 * T, { subject: 'sha256:i' });
    push(ledger, 'ret/a', 'sha256:i', 40 * T + 1, { tag: 'keep-c0-3', children: ['sha256:c'] });
    assert.equal(ledger.protectedAt(young, 50 * T), true);
  });
});

describe('soak checker: a DELETE of a manifest answered 404', () => {
  const reply = (start: number, end: number): Reply => ({ status: 404, headers: new Headers(), body: Buffer.alloc(0), servedBy: 'berth1', start, end });

  it('is done, not lost, when a kill was in flight (HAProxy retried it); lost otherwise, and a store pause does not excuse it', () => {
    const faults = new FaultInjector(undefined as unknown as SoakCluster, new Random(1));
    faults.faults.push({ kind: 'worker-kill', instance: 0, start: 10_000, end: 12_000 }, { kind: 'store-pause', start: 50_000, end: 53_000 });
    const ledger = new Ledger();
    const checker = new Checker(undefined as unknown as Wire, ledger, (span) => faults.killDuring(span));
    const rec = (digest: string) => push(ledger, 'soak/a', digest, 0);
    assert.equal(checker.deleteNotFound(rec('sha256:a'), reply(9_800, 10_300)), 'retried');
    assert.equal(checker.deleteNotFound(rec('sha256:b'), reply(11_500, 11_900)), 'retried', 'within the slack after the kill');
    assert.equal(checker.deleteNotFound(rec('sha256:c'), reply(30_000, 30_200)), 'lost');
    assert.equal(checker.deleteNotFound(rec('sha256:d'), reply(51_000, 51_200)), 'lost');
    assert.deepEqual([...checker.losses.keys()], ['soak/a@sha256:c', 'soak/a@sha256:d']);
  });
});
