import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BufferPool } from '../../src/storage/buffer-pool.js';

describe('BufferPool', () => {
  it('lends at most its capacity, in whole requests', () => {
    const pool = new BufferPool(1024, 3);
    const pair = pool.take(2);
    assert.equal(pair?.length, 2);
    assert.ok(pair.every((b) => b.length === 1024));
    assert.equal(pool.take(2), undefined, 'a second pair would exceed the budget of 3');
    assert.equal(pool.take(1)?.length, 1);
    assert.equal(pool.take(1), undefined);
  });

  it('lends again what was given back instead of allocating', () => {
    const pool = new BufferPool(16, 4);
    const first = pool.take(3)!;
    pool.give(first);
    const again = pool.take(4)!;
    // the three given back are lent again; only the fourth is new
    assert.equal(again.filter((b) => first.includes(b)).length, 3);
    assert.equal(new Set(again).size, 4);
  });
});
