import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setImmediate as tick } from 'node:timers/promises';
import { forEach, mapLimited } from '../../src/registry/pool.js';

/** work that records how many calls are in flight at once */
function tracked() {
  let inFlight = 0;
  const state = { peak: 0 };
  const work = async (n: number) => {
    state.peak = Math.max(state.peak, ++inFlight);
    await tick();
    await tick();
    inFlight--;
    return n * 2;
  };
  return { state, work };
}

describe('bounded fan-out', () => {
  it('mapLimited keeps at most `limit` calls in flight and the results in the items\' order', async () => {
    const { state, work } = tracked();
    const items = Array.from({ length: 1000 }, (_, i) => i);
    assert.deepEqual(await mapLimited(items, 16, work), items.map((n) => n * 2));
    assert.equal(state.peak, 16);
  });

  it('forEach runs every item once, bounded, over an async iterable too', async () => {
    const { state, work } = tracked();
    const seen: number[] = [];
    async function* numbers() {
      for (let i = 0; i < 100; i++) yield i;
    }
    await forEach(numbers(), 4, async (n) => {
      seen.push(await work(n));
    });
    assert.deepEqual(seen.sort((a, b) => a - b), Array.from({ length: 100 }, (_, i) => i * 2));
    assert.equal(state.peak, 4);
  });

  it('a failure rejects the whole fan-out', async () => {
    await assert.rejects(mapLimited([1, 2, 3], 2, async (n) => {
      if (n === 2) throw new Error('boom');
      return n;
    }), /boom/);
  });
});
