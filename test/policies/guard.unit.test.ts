/** The policies' guard: each refusal is a 403 DENIED naming the rule (the edge records it in the audit log, as every 403). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PolicyGuard } from '../../src/policies/guard.js';
import { PolicySet } from '../../src/policies/match.js';

const A = `sha256:${'a'.repeat(64)}` as const;
const B = `sha256:${'b'.repeat(64)}` as const;

describe('PolicyGuard', () => {
  it('refuses a move and a delete of an immutable tag with DENIED, naming the rule and the digests', () => {
    const guard = new PolicyGuard(new PolicySet([{ repositories: ['prod/**'], immutabletags: ['v*'] }]), undefined);
    const rule = guard.fixedTag('prod/app', 'v1')!;
    assert.equal(guard.fixedTag('prod/app', 'latest'), undefined);
    const moved = guard.refused({ name: 'prod/app', tag: 'v1', rule, move: { from: A, to: B } });
    assert.equal(moved.code, 'DENIED');
    assert.match(moved.message, new RegExp(`tag v1 of prod/app is immutable .*: it names ${A} and cannot be moved to ${B}`));
    assert.deepEqual(moved.detail, { rule, tag: 'v1', digest: A });
    const deleted = guard.refused({ name: 'prod/app', tag: 'v1', rule, delete: A });
    assert.equal(deleted.code, 'DENIED');
    assert.match(deleted.message, /cannot be deleted: the immutable tag v1 names it \(immutable tag rule "v\*" of policies\[0\] \(prod\/\*\*\)\)/);
  });
});
