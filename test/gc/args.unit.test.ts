// The arguments of `berth garbage-collect` (fast, no storage).
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { parseCollectArgs } from '../../src/cli/garbage-collect-args.js';

describe('garbage-collect arguments', () => {
  it("takes Distribution's flags, short and long, in any order", () => {
    assert.deepEqual(parseCollectArgs(['config.yml']), { dryRun: false, deleteUntagged: false, quiet: false, retention: false, file: 'config.yml' });
    assert.deepEqual(parseCollectArgs(['-m', 'c.yml', '--dry-run', '-q']), { dryRun: true, deleteUntagged: true, quiet: true, retention: false, file: 'c.yml' });
    assert.deepEqual(parseCollectArgs(['--delete-untagged', '--quiet', '-d']), { dryRun: true, deleteUntagged: true, quiet: true, retention: false });
    assert.deepEqual(parseCollectArgs(['--retention', '--dry-run', 'c.yml']), { dryRun: true, deleteUntagged: false, quiet: false, retention: true, file: 'c.yml' });
  });

  it('says what is wrong with the others', () => {
    assert.equal(parseCollectArgs(['--force', 'c.yml']), 'unknown flag --force');
    assert.equal(parseCollectArgs(['a.yml', 'b.yml']), 'one configuration file only, got a.yml and b.yml');
  });
});
