/** Configuration of auth, redis, ratelimit and http.tls: shapes, defaults, and errors that name the key. */
import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { configProblems } from '../helpers/config.js';
import { ConfigError, maskSecrets, validateConfig } from '../../src/config/load.js';
import { createApp } from '../../src/app.js';
import { pino } from 'pino';

const base = { version: '0.1', storage: { inmemory: {} } };

function problems(raw: Record<string, unknown>): string[] {
  return configProblems(() => validateConfig({ ...base, ...raw }, 'test'));
}

describe('auth configuration', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'berth-authconf-'));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it("takes Distribution's token block with issuer as a string", () => {
    const config = validateConfig(
      { ...base, auth: { token: { realm: 'https://auth.example.com/token', service: 'registry', issuer: 'auth-service', rootcertbundle: '/certs/bundle.pem' } } },
      'test',
    );
    assert.equal(config.auth?.token?.issuer.name, 'auth-service');
    assert.equal(config.auth?.token?.issuer.enabled, false);
    assert.equal(config.auth?.token?.autoredirectpath, '/auth/token');
  });

  it('takes the built-in issuer as an object, with durations', () => {
    const config = validateConfig(
      {
        ...base,
        auth: {
          htpasswd: { path: '/auth/htpasswd' },
          token: { autoredirect: true, service: 'registry', issuer: { name: 'berth', enabled: true, signingkey: '/auth/key.pem', expiration: '15m' } },
          access: { '**': { '*': ['pull'] }, 'team/*': { alice: ['pull', 'push', 'delete'] } },
        },
      },
      'test',
    );
    assert.equal(config.auth?.htpasswd?.realm, 'berth');
    assert.equal(config.auth?.token?.issuer.expiration, 15 * 60_000);
    assert.equal(config.auth?.token?.issuer.refreshexpiration, 168 * 3600_000);
  });

  it('names the key of every mistake', () => {
    assert.ok(problems({ auth: { htpasswd: {} } }).some((p) => p.startsWith('auth.htpasswd.path:')));
    assert.ok(problems({ auth: { token: { realm: 'https://a/t', issuer: 'x', jwks: '/j' } } }).some((p) => p.startsWith('auth.token.service:')));
    assert.ok(problems({ auth: { token: { realm: 'https://a/t', service: 's', issuer: 'x' } } }).some((p) => p.includes('rootcertbundle or jwks')));
    assert.ok(problems({ auth: { token: { service: 's', issuer: 'x', jwks: '/j' } } }).some((p) => p.startsWith('auth.token.realm:')));
    assert.ok(problems({ auth: { htpasswd: { path: '/h' }, token: { realm: 'https://a/t', service: 's', issuer: { name: 'x', enabled: true } } } }).some((p) => p.startsWith('auth.token.issuer.signingkey:')));
    assert.ok(problems({ auth: { token: { realm: 'https://a/t', service: 's', issuer: { name: 'x', enabled: true, signingkey: '/k' } } } }).some((p) => p.startsWith('auth.htpasswd:')));
    assert.ok(problems({ auth: { htpasswd: { path: '/h' }, token: { realm: 'https://a/t', service: 's', issuer: 'x', jwks: '/j' } } }).some((p) => p.includes('one of htpasswd and token')));
    assert.ok(problems({ auth: { access: { '**': { '*': ['pull'] } } } }).some((p) => p.startsWith('auth.access:')));
    assert.ok(problems({ auth: { htpasswd: { path: '/h' }, access: { 'Team/App': { '*': ['pull'] } } } }).some((p) => p.startsWith('auth.access.Team/App:')));
    assert.ok(problems({ auth: { htpasswd: { path: '/h' }, access: { '**': { '*': ['write'] } } } }).some((p) => p.startsWith('auth.access.**.*.0:')));
    assert.ok(problems({ auth: { silly: { realm: 'x' } } }).some((p) => p.includes('not implemented')));
  });

  it('validates ratelimit, redis and http.tls', () => {
    assert.ok(problems({ ratelimit: { rate: 0, burst: 1 } }).some((p) => p.startsWith('ratelimit.rate:')));
    assert.ok(problems({ ratelimit: { rate: 1, burst: 0 } }).some((p) => p.startsWith('ratelimit.burst:')));
    assert.ok(problems({ ratelimit: { rate: 1, burst: 1, by: 'host' } }).some((p) => p.startsWith('ratelimit.by:')));
    assert.ok(problems({ redis: { addr: 'nohost' } }).some((p) => p.startsWith('redis.addr:')));
    assert.ok(problems({ http: { tls: { certificate: '/c' } } }).some((p) => p.startsWith('http.tls.key:')));
    assert.ok(problems({ http: { tls: { certificate: '/c', key: '/k', minimumtls: 'tls1.1' } } }).some((p) => p.startsWith('http.tls.minimumtls:')));
    const config = validateConfig({ ...base, ratelimit: { rate: '2.5', burst: '10' }, redis: { addr: 'localhost:6379', password: 'pw' } }, 'test');
    assert.equal(config.ratelimit?.rate, 2.5);
    assert.equal(config.ratelimit?.by, 'ip');
    assert.equal((maskSecrets(config) as { redis: { password: string } }).redis.password, '********');
  });

  it('refuses at start-up an htpasswd file with other hash kinds, and unreadable keys and certificates', async () => {
    const logger = pino({ level: 'silent' });
    const htpasswd = join(dir, 'htpasswd');
    await writeFile(htpasswd, 'alice:$apr1$abcdefgh$0123456789abcdefghijkl\n');
    await assert.rejects(
      () => createApp(validateConfig({ ...base, auth: { htpasswd: { path: htpasswd } } }, 'test'), { logger }),
      (err: Error) => err instanceof ConfigError && /line 1.*alice.*Apache MD5.*bcrypt only/.test(err.message),
    );
    await assert.rejects(
      () => createApp(validateConfig({ ...base, http: { tls: { certificate: join(dir, 'none.crt'), key: join(dir, 'none.key') } } }, 'test'), { logger }),
      (err: Error) => err instanceof ConfigError && err.message.includes('http.tls.certificate'),
    );
    await writeFile(join(dir, 'key.pem'), 'not a key');
    await writeFile(htpasswd, '');
    await assert.rejects(
      () =>
        createApp(
          validateConfig({ ...base, auth: { htpasswd: { path: htpasswd }, token: { autoredirect: true, service: 's', issuer: { name: 'i', enabled: true, signingkey: join(dir, 'key.pem') } } } }, 'test'),
          { logger },
        ),
      (err: Error) => err instanceof ConfigError && err.message.includes('signingkey'),
    );
    await writeFile(join(dir, 'jwks.json'), '{"keys":[{"kty":"oct","k":"c2VjcmV0","kid":"h"}]}');
    await assert.rejects(
      () => createApp(validateConfig({ ...base, auth: { token: { realm: 'https://a/t', service: 's', issuer: 'i', jwks: join(dir, 'jwks.json') } } }, 'test'), { logger }),
      (err: Error) => err instanceof ConfigError && err.message.includes('only public RSA, EC or OKP'),
    );
  });
});
