import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { firstValue } from '../../src/http/headers.js';

describe('firstValue', () => {
  it('takes the first of a comma-separated list, trimmed', () => {
    assert.equal(firstValue('203.0.113.7, 10.0.0.1'), '203.0.113.7');
    assert.equal(firstValue(' https '), 'https');
  });

  it('takes the first of a repeated header', () => {
    assert.equal(firstValue(['a.example, b.example', 'c.example']), 'a.example');
  });

  it('is undefined for a missing or empty header', () => {
    assert.equal(firstValue(undefined), undefined);
    assert.equal(firstValue(''), undefined);
    assert.equal(firstValue(' , x'), undefined);
    assert.equal(firstValue([]), undefined);
  });
});
