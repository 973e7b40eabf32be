/**
 * The soak's model of what must be served (ledger.ts): everything acknowledged and not deleted,
 * except what the retention policy of `ret/**` may remove, and nothing more.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { RETENTION } from './cluster.js';
import { Ledger, SLACK_MS, type ManifestRecord } from './ledger.js';

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
});
