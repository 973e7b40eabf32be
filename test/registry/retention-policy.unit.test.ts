/** Retention rules as decisions (no storage), and their configuration's errors. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { validateConfig } from '../../src/config/load.js';
import { compilePolicies, policyFor, tagsToDelete } from '../../src/registry/retention/policy.js';
import { configProblems } from '../helpers/config.js';

const H = 3_600_000;
const NOW = 100 * H;

describe('retention policies', () => {
  const [team, all] = compilePolicies([
    { repositories: ['team/*'], keep: { newest: 1, tags: ['latest', 'v\\d+'] }, delete: { tagsolderthan: 10 * H, notpulledfor: 5 * H } },
    { repositories: ['**'], keep: {}, delete: { untaggedolderthan: H } },
  ]);

  it('governs a repository by the first policy whose glob matches', () => {
    assert.equal(policyFor([team, all], 'team/app'), team);
    assert.equal(policyFor([team, all], 'team/app/sub'), all, '* stays within one component');
    assert.equal(policyFor([team], 'other'), undefined);
  });

  it('deletes a tag only when every tag rule holds and no keep rule protects it', () => {
    const tags = [
      { tag: 'newest', pushed: NOW - 50 * H }, // the newest: kept
      { tag: 'old-unpulled', pushed: NOW - 60 * H }, // both rules hold
      { tag: 'old-pulled', pushed: NOW - 60 * H, pulled: NOW - H }, // pulled recently
      { tag: 'latest', pushed: NOW - 90 * H }, // kept by name
      { tag: 'v12', pushed: NOW - 90 * H }, // kept by pattern (whole name)
      { tag: 'v12-rc', pushed: NOW - 90 * H, pulled: NOW - 6 * H },
    ];
    assert.deepEqual(tagsToDelete(team, tags, NOW), [
      { tag: 'old-unpulled', reason: 'pushed 2d12h ago, never pulled' },
      { tag: 'v12-rc', reason: 'pushed 3d18h ago, last pulled 6h ago' },
    ]);
    assert.deepEqual(tagsToDelete(all, tags, NOW), [], 'no tag rule: no tag goes');
  });

  it('refuses a policy that deletes nothing, one without repositories, and retention on without policies', () => {
    const base = { version: '0.1', storage: { inmemory: {} } };
    const problems = (retention: unknown) => configProblems(() => validateConfig({ ...base, storage: { ...base.storage, maintenance: { retention } } }, 'test'));
    assert.match(problems({ policies: [{ repositories: ['**'], keep: { newest: 3 } }] })[0], /^storage\.maintenance\.retention\.policies\.0\.delete: .*a policy must delete something/);
    assert.match(problems({ policies: [{ repositories: [], delete: { untaggedolderthan: '1h' } }] })[0], /repositories: name at least one repository glob/);
    assert.match(problems({ enabled: true })[0], /retention is enabled without policies/);
    assert.match(problems({ policies: [{ repositories: ['Team/*'], delete: { untaggedolderthan: '1h' } }] })[0], /expected a repository glob/);
    assert.match(problems({ policies: [{ repositories: ['**'], keep: { tags: ['(unclosed'] }, delete: { notpulledfor: '1h' } }] })[0], /valid regular expression/);
  });
});
