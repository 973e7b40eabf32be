/** The policies' guard: each denial is a 403 DENIED naming the rule, and is handed to the audit sink (action `deny`). */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AuditRecord } from '../../src/audit/record.js';
import { PolicyGuard } from '../../src/policies/guard.js';
import { PolicySet } from '../../src/policies/match.js';

const A = `sha256:${'a'.repeat(64)}` as const;
const B = `sha256:${'b'.repeat(64)}` as const;

describe('PolicyGuard', () => {
  it('records each denial in the audit log, with the message as detail', () => {
    const records: AuditRecord[] = [];
    const guard = new PolicyGuard(new PolicySet([{ repositories: ['prod/**'], immutabletags: ['v*'] }]), undefined, { record: (r) => records.push(r) });
    const rule = guard.fixedTag('prod/app', 'v1')!;
    assert.equal(guard.fixedTag('prod/app', 'latest'), undefined);
    const moved = guard.refused({ name: 'prod/app', tag: 'v1', rule, actor: 'ci', move: { from: A, to: B } });
    assert.equal(moved.code, 'DENIED');
    const deleted = guard.refused({ name: 'prod/app', tag: 'v1', rule, delete: A });
    assert.match(deleted.message, /cannot be deleted: the immutable tag v1 names it \(immutable tag rule "v\*" of policies\[0\] \(prod\/\*\*\)\)/);
    assert.deepEqual(records, [
      { actor: 'ci', action: 'deny', repository: 'prod/app', target: 'v1', outcome: 'denied', detail: moved.message },
      { actor: undefined, action: 'deny', repository: 'prod/app', target: 'v1', outcome: 'denied', detail: deleted.message },
    ]);
  });

  it('never fails the request when the sink throws', () => {
    const guard = new PolicyGuard(new PolicySet([{ repositories: ['**'], immutabletags: ['*'] }]), undefined, {
      record: () => {
        throw new Error('audit store down');
      },
    });
    assert.equal(guard.refused({ name: 'x', tag: 't', rule: 'r', delete: A }).code, 'DENIED');
  });
});
