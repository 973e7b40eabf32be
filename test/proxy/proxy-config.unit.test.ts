/** The proxy block: Distribution's keys, what is not implemented yet refused clearly, secrets masked; the challenge parser. */
import assert from 'node:assert/strict';
import { proxyTTLs } from '../../src/features/expiry.js';
import { describe, it } from 'node:test';
import { applyEnvOverrides, maskSecrets, validateConfig } from '../../src/config/load.js';
import { parseChallenge } from '../../src/proxy/challenge.js';
import { configProblems } from '../helpers/config.js';

const base = { version: '0.1', storage: { inmemory: {} } };
const withProxy = (proxy: unknown) => validateConfig({ ...base, proxy }, 'test');

describe('proxy configuration', () => {
  it('takes remoteurl, username, password and ttl 0, and masks the password', () => {
    const config = withProxy({ remoteurl: 'https://registry-1.docker.io', username: 'me', password: 'hunter2', ttl: '0' });
    assert.deepEqual(config.proxy, { remoteurl: 'https://registry-1.docker.io', username: 'me', password: 'hunter2', ttl: 0 });
    assert.deepEqual((maskSecrets(config) as { proxy: unknown }).proxy, { remoteurl: 'https://registry-1.docker.io', username: 'me', password: '********', ttl: 0 });
  });

  it('takes the password from REGISTRY_PROXY_PASSWORD', () => {
    const tree = applyEnvOverrides({ ...base, proxy: { remoteurl: 'https://r.example', username: 'me' } }, { REGISTRY_PROXY_PASSWORD: 'from-env' });
    assert.equal(validateConfig(tree, 'test').proxy?.password, 'from-env');
  });

  it("takes a TTL, 168h by default as Distribution's, and refuses one that is no duration", () => {
    assert.equal(withProxy({ remoteurl: 'https://r.example', ttl: '1h30m' }).proxy?.ttl, 5_400_000);
    // unset means Distribution's 168h (applied by the expiry feature, so upstreams may say it each)
    assert.equal(proxyTTLs(withProxy({ remoteurl: 'https://r.example' }).proxy).ttlOf('any/repo'), 168 * 3_600_000);
    const mirrors = proxyTTLs(withProxy({ upstreams: [{ prefix: 'hub', remoteurl: 'https://h.example' }, { prefix: 'q', remoteurl: 'https://q.example', ttl: '0' }] }).proxy);
    assert.equal(mirrors.ttlOf('hub/library/alpine'), 168 * 3_600_000);
    assert.equal(mirrors.ttlOf('q/x'), 0, 'kept forever');
    assert.equal(mirrors.ttlOf('company/app'), undefined, 'a private repository has no TTL');
    assert.match(configProblems(() => withProxy({ remoteurl: 'https://r.example', ttl: 'a week' }))[0], /^proxy\.ttl: expected a duration/);
  });

  it('refuses an empty upstreams list, credentials in the URL, half the credentials and a URL that is not http(s)', () => {
    assert.match(configProblems(() => withProxy({ upstreams: [] }))[0], /^proxy\.upstreams: Too small/);
    const inURL = configProblems(() => withProxy({ remoteurl: 'https://me:hunter2@r.example' }));
    assert.match(inURL[0], /^proxy\.remoteurl: put the credentials in username and password/);
    assert.doesNotMatch(inURL.join(), /hunter2/);
    assert.match(configProblems(() => withProxy({ remoteurl: 'https://r.example', username: 'me' }))[0], /proxy: set username with password \(or passwordfile\)/);
    assert.match(configProblems(() => withProxy({ remoteurl: 'ftp://r.example' }))[0], /^proxy\.remoteurl: expected the http\(s\) URL/);
  });

  it('takes realmhosts and redirecthosts (host, host:port, *.domain), per upstream with upstreams, and refuses other forms', () => {
    const hosts = { realmhosts: ['auth.example.com', '127.0.0.2'], redirecthosts: ['cdn.example.net:8443', '*.s3.amazonaws.com', '[::1]:9000'] };
    assert.deepEqual(withProxy({ remoteurl: 'https://r.example', ...hosts }).proxy, { remoteurl: 'https://r.example', ...hosts });
    assert.deepEqual(withProxy({ upstreams: [{ prefix: 'hub', remoteurl: 'https://h.example', ...hosts }] }).proxy?.upstreams?.[0], { prefix: 'hub', remoteurl: 'https://h.example', ...hosts });
    assert.match(configProblems(() => withProxy({ remoteurl: 'https://r.example', realmhosts: ['https://auth.example.com/token'] }))[0], /^proxy\.realmhosts\.0: expected a host name, host:port or \*\.domain/);
    assert.match(configProblems(() => withProxy({ upstreams: [{ prefix: 'hub', remoteurl: 'https://h.example' }], redirecthosts: ['cdn.example.net'] }))[0], /^proxy\.redirecthosts: with proxy\.upstreams, set redirecthosts on each upstream/);
  });
});

describe('WWW-Authenticate challenges', () => {
  it('parses Bearer and Basic challenges, quoted and bare values', () => {
    assert.deepEqual(parseChallenge('Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/alpine:pull"'), {
      scheme: 'bearer',
      params: { realm: 'https://auth.docker.io/token', service: 'registry.docker.io', scope: 'repository:library/alpine:pull' },
    });
    assert.deepEqual(parseChallenge('Basic realm="Registry Realm"'), { scheme: 'basic', params: { realm: 'Registry Realm' } });
    assert.deepEqual(parseChallenge('bearer realm=https://x/t, service=s'), { scheme: 'bearer', params: { realm: 'https://x/t', service: 's' } });
    assert.equal(parseChallenge('Negotiate abc'), undefined);
    assert.equal(parseChallenge(null), undefined);
  });
});
