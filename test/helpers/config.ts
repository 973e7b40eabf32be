/** Configuration test helpers. */
import assert from 'node:assert/strict';
import { ConfigError } from '../../src/config/load.js';

/** the problems of the ConfigError `fn` throws; fails the test when it throws none or another error */
export function configProblems(fn: () => unknown): string[] {
  try {
    fn();
  } catch (err) {
    assert.ok(err instanceof ConfigError, String(err));
    return err.problems;
  }
  assert.fail('expected a ConfigError');
}
