/** The rules of a federated issuer: claim globs, nested claims, the first matching rule, and `{{claim}}` that can never widen a glob. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FederatedGrant, matchRules, type FederatedIssuerOptions } from '../../src/auth/federation-rules.js';

const issuer = (rules: FederatedIssuerOptions['rules']): FederatedIssuerOptions => ({ name: 'ci', issuer: 'https://ci', jwksuri: 'https://ci/jwks', audience: 'berth', algorithms: ['RS256'], rules });
const pull = (name: string) => ({ type: 'repository' as const, name, action: 'pull' });
const push = (name: string) => ({ type: 'repository' as const, name, action: 'push' });

describe('federation rules', () => {
  it('takes the first rule whose claims all match, in file order', () => {
    const rules = issuer([
      { claims: { repository: 'acme/*', ref: 'refs/heads/main' }, repositories: ['acme/**'], actions: ['pull', 'push'] },
      { claims: { repository: 'acme/*' }, repositories: ['acme/**'], actions: ['pull'] },
    ]);
    const main = matchRules(rules, 'ci:x', { repository: 'acme/app', ref: 'refs/heads/main' });
    assert.ok(main instanceof FederatedGrant);
    assert.equal(main.rule, 'rule 1 of ci');
    assert.ok(main.allows(push('acme/app/sub')));
    const dev = matchRules(rules, 'ci:x', { repository: 'acme/app', ref: 'refs/heads/dev' });
    assert.ok(dev instanceof FederatedGrant);
    assert.equal(dev.rule, 'rule 2 of ci');
    assert.ok(dev.allows(pull('acme/app')) && !dev.allows(push('acme/app')) && !dev.allows(pull('other/app')));
    assert.equal(matchRules(rules, 'ci:x', { repository: 'acmex/app' }), 'no rule of issuer "ci" matches the token\'s claims: repository="acmex/app", ref=(absent)');
  });

  it('reads nested claims by path, numbers and booleans as text, and arrays by any item', () => {
    const rules = issuer([{ claims: { 'kubernetes.io/namespace': 'team-*', ref_protected: 'true', groups: 'builders', run: '7' }, repositories: ['ci/*'], actions: ['pull'] }]);
    const claims = { 'kubernetes.io': { namespace: 'team-a' }, ref_protected: true, groups: ['x', 'builders'], run: 7 };
    assert.ok(matchRules(rules, 'ci:x', claims) instanceof FederatedGrant);
    assert.match(matchRules(rules, 'ci:x', { ...claims, groups: ['x'] }) as string, /groups="x"/);
    assert.match(matchRules(rules, 'ci:x', { ...claims, 'kubernetes.io': { namespace: 'prod' } }) as string, /kubernetes\.io\/namespace="prod"/);
  });

  it('substitutes {{claim}} lower-cased, and a value that is no repository path matches nothing', () => {
    const rules = issuer([{ claims: { repository: '*' }, repositories: ['{{repository}}', 'cache/{{repository}}'], actions: ['pull', 'push'] }]);
    const grant = matchRules(rules, 'ci:x', { repository: 'Acme/App' });
    assert.ok(grant instanceof FederatedGrant);
    assert.deepEqual(grant.repositories, ['acme/app', 'cache/acme/app']);
    assert.ok(grant.allows(push('acme/app')) && !grant.allows(push('acme/other')));
    for (const repository of ['acme/*', '**', 'acme/../x', 'a b', '']) {
      assert.equal(typeof matchRules(rules, 'ci:x', { repository }), 'string', repository);
    }
  });

  it('allows the catalog (filtered by pull) and says when it pulls everything', () => {
    const all = matchRules(issuer([{ claims: { sub: '*' }, repositories: ['**'], actions: ['pull'] }]), 'ci:x', { sub: 'a' }) as FederatedGrant;
    assert.ok(all.pullsEverything());
    assert.ok(all.allows({ type: 'registry', name: 'catalog', action: '*' }));
    const some = matchRules(issuer([{ claims: { sub: '*' }, repositories: ['a/**'], actions: ['pull'] }]), 'ci:x', { sub: 'a' }) as FederatedGrant;
    assert.ok(!some.pullsEverything());
  });
});
