/**
 * docs/distribution-keys.md says, for every key of Distribution's configuration reference, whether
 * berth implements it, accepts it with a warning or refuses it (and why). This holds berth's loader
 * to the table: each section is validated again with the table's example values, and every key must
 * come out as the table says; no real Distribution key may be refused as an "unknown key", the
 * words a typo gets.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { classify, sectionOf, type Row } from '../helpers/distribution-keys.js';

const table = readFileSync(new URL('../../docs/distribution-keys.md', import.meta.url), 'utf8');
const rows: Row[] = [...table.matchAll(/^\| `([^`]+)` \| `(.*)` \| (implemented|warned|refused)(?:: (.*))? \|$/gm)].map(([, key, example, status, why]) => ({
  key,
  example: JSON.parse(example.replace(/\\\|/g, '|')) as unknown,
  status: status as Row['status'],
  ...(why && { why: why.replace(/\\\|/g, '|') }),
}));

describe("Distribution's configuration keys (docs/distribution-keys.md)", () => {
  it('lists every key of the reference, each classified', () => {
    assert.ok(rows.length >= 150, `${rows.length} rows`);
    assert.equal(new Set(rows.map((r) => r.key)).size, rows.length, 'each key once');
  });

  it('each key is what the table says it is', () => {
    const bySection = new Map<string, Row[]>();
    for (const row of rows) bySection.set(sectionOf(row.key), [...(bySection.get(sectionOf(row.key)) ?? []), row]);
    const differences: string[] = [];
    for (const [section, sectionRows] of bySection) {
      const now = classify(section, sectionRows.map((r) => [r.key, r.example]));
      for (const [i, row] of sectionRows.entries()) {
        if (now[i].status !== row.status || now[i].why !== row.why) differences.push(`${row.key}: table says ${row.status} (${row.why ?? ''}), berth does ${now[i].status} (${now[i].why ?? ''})`);
      }
    }
    assert.deepEqual(differences, [], 'regenerate the table with tools/distribution-keys.ts, or fix berth');
  });

  it('refuses no real Distribution key with the words a typo gets', () => {
    assert.deepEqual(rows.filter((r) => r.why === 'unknown key').map((r) => r.key), []);
  });
});
