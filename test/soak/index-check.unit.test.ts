/** The soak's reading of `berth verify --index` (index-check.ts): what explains each difference. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { explainIndexDifferences } from './index-check.js';

const D1 = `sha256:${'1'.repeat(64)}`;
const D2 = `sha256:${'2'.repeat(64)}`;

describe('explainIndexDifferences', () => {
  const context = {
    verifyOutput: [
      `leftover: soak/a: layer link ${D1}, used by no manifest, names a blob that is not stored: an upload links before it moves the blob, or garbage collection left it`,
      'verify: 5 repositories, 30 manifests: no damage found; 1 leftovers (not damage)',
    ].join('\n'),
    writes: [
      { method: 'PUT', path: '/v2/soak/c/manifests/v1', start: 1000, end: 1200, detail: '' },
      { method: 'DELETE', path: '/v2/soak/d/manifests/v1', start: 5000, end: 5100, detail: '' },
    ],
    // one kill, at 1100
    killDuring: (e: { start: number; end: number }) => (e.start <= 1100 && e.end >= 1100 ? 'kill' : undefined),
    retentionPrefix: 'ret/',
  };

  it('retention, the online collection and a kill during a write explain theirs; anything else is unexplained', () => {
    const result = explainIndexDifferences(
      [
        `ret/a@${D1}: manifest in the index, not in storage`,
        `ret/b:c0-1: tag in the index (${D1}), not in storage`,
        `soak/a: blob ${D1} linked in the index, not in storage`,
        `soak/a: blob ${D2} linked in the index, not in storage`,
        `soak/c@${D2}: manifest in storage, not in the index`,
        `soak/d:v1: tag in the index (${D2}), not in storage`,
      ],
      context,
    );
    assert.deepEqual(result, {
      retention: 2,
      collected: 1,
      killed: 1,
      unexplained: [`soak/a: blob ${D2} linked in the index, not in storage`, `soak/d:v1: tag in the index (${D2}), not in storage`],
    });
  });
});
