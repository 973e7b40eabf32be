/** The `replication` block: complete rules accepted, each mistake named by its key, onlysigned refused until the signature policy exists, the password masked, the JSON Schema true. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { maskSecrets, validateConfig } from '../../src/config/load.js';
import { configJsonSchema } from '../../src/config/json-schema.js';
import { replicationRules } from '../../src/features/replication.js';
import { configProblems } from '../helpers/config.js';

const config = (replication: unknown) => validateConfig({ version: '0.1', storage: { inmemory: {} }, replication }, 'test');
const problems = (replication: unknown) => configProblems(() => config(replication)).join('\n');

const pull = { name: 'upstream-lib', pull: { url: 'https://upstream.example', username: 'u', password: 'p' }, repositories: ['lib/**'], tags: ['^v[0-9]'], platforms: ['linux/amd64', 'linux/arm64/v8'], interval: '1h' };
const push = { name: 'dr', push: { url: 'https://dr.example', username: 'u', password: 'p' }, repositories: ['**'], deletes: true };

describe('replication configuration', () => {
  it('takes the issue\'s examples, with their defaults', async () => {
    const rules = config([pull, push]).replication!;
    assert.equal(rules[0].interval, 3_600_000);
    assert.equal(rules[0].deletes, false);
    assert.equal(rules[0].concurrency, 8);
    assert.equal(rules[1].deletes, true);
    const plan = await replicationRules(rules);
    assert.deepEqual(plan.map((r) => [r.name, r.direction, r.remote.url, r.remote.password]), [
      ['upstream-lib', 'pull', 'https://upstream.example', 'p'],
      ['dr', 'push', 'https://dr.example', 'p'],
    ]);
  });

  it('refuses onlysigned with a message that says why and what to do', () => {
    assert.match(problems([{ ...pull, onlysigned: true }]), /^replication\.0\.onlysigned: onlysigned needs the signature policy, which this version of berth does not have yet/);
    assert.equal(config([{ ...pull, onlysigned: false }]).replication![0].name, 'upstream-lib');
  });

  it('names the key of each mistake', () => {
    assert.match(problems([{ ...pull, push: push.push }]), /^replication\.0: a rule sets pull .* or push .*, not both or neither/);
    assert.match(problems([{ name: 'x', repositories: ['**'] }]), /^replication\.0: a rule sets pull/);
    assert.match(problems([{ ...push, interval: '1h' }]), /^replication\.0\.interval: interval is for pull rules/);
    assert.match(problems([{ ...pull, deletes: true }]), /^replication\.0\.deletes: deletes is for push rules/);
    assert.match(problems([{ ...push, platforms: ['linux/amd64'] }]), /^replication\.0\.platforms: platforms is for pull rules/);
    assert.match(problems([pull, pull]), /^replication\.1\.name: rule name upstream-lib is used twice/);
    assert.match(problems([{ ...pull, name: 'Upper Case' }]), /^replication\.0\.name: expected a rule name/);
    assert.match(problems([{ ...pull, repositories: ['Lib'] }]), /^replication\.0\.repositories\.0: expected a repository glob/);
    assert.match(problems([{ ...pull, tags: ['('] }]), /^replication\.0\.tags\.0: expected a valid regular expression/);
    assert.match(problems([{ ...pull, platforms: ['amd64'] }]), /^replication\.0\.platforms\.0: expected a platform such as "linux\/amd64"/);
    assert.match(problems([{ ...pull, pull: { url: 'ftp://x' } }]), /^replication\.0\.pull\.url: /);
    assert.match(problems([{ ...pull, pull: { url: 'https://u:p@x.example' } }]), /^replication\.0\.pull\.url: put the credentials in username and password/);
    assert.match(problems([{ ...pull, pull: { url: 'https://x.example', username: 'u' } }]), /pull: set username with password/);
    assert.match(problems([{ ...pull, interval: '10ms' }]), /^replication\.0\.interval: expected a duration of at least 1s/);
  });

  it('masks the remote\'s password wherever the configuration is shown', () => {
    const masked = maskSecrets(config([pull])) as { replication: { pull: { password: string } }[] };
    assert.notEqual(masked.replication[0].pull.password, 'p');
  });

  it('is in the JSON Schema', () => {
    const schema = configJsonSchema() as { properties: { replication: { items: { properties: Record<string, unknown> } } } };
    assert.deepEqual(Object.keys(schema.properties.replication.items.properties).sort(), ['concurrency', 'deletes', 'interval', 'name', 'onlysigned', 'platforms', 'pull', 'push', 'repositories', 'tags']);
  });
});
