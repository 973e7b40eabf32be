/** auth.federation in the configuration: its shape and defaults, and errors that name the key. */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { pino } from 'pino';
import { parse as parseYAML } from 'yaml';
import { createApp } from '../../src/app.js';
import { ConfigError, validateConfig } from '../../src/config/load.js';
import { configProblems } from '../helpers/config.js';

const base = { version: '0.1', storage: { inmemory: {} } };
const GITHUB = {
  issuer: 'https://token.actions.githubusercontent.com',
  jwksuri: 'https://token.actions.githubusercontent.com/.well-known/jwks',
  audience: 'https://registry.example.com',
  rules: [{ claims: { repository: 'acme/*', ref: 'refs/heads/main' }, repositories: ['{{repository}}'], actions: ['pull', 'push'] }],
};

function problems(federation: unknown, withHtpasswd = true): string[] {
  return configProblems(() => validateConfig({ ...base, auth: { htpasswd: withHtpasswd ? { path: '/h' } : undefined, federation } }, 'test'));
}

describe('auth.federation configuration', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'berth-fedconf-'));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('takes an issuer with defaults: its host as name, every asymmetric algorithm', () => {
    const config = validateConfig({ ...base, auth: { htpasswd: { path: '/h' }, federation: [GITHUB] } }, 'test');
    const [issuer] = config.auth!.federation!;
    assert.equal(issuer.name, 'token.actions.githubusercontent.com');
    assert.deepEqual(issuer.algorithms, ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'EdDSA']);
    const k8s = validateConfig(
      { ...base, auth: { htpasswd: { path: '/h' }, federation: [{ name: 'k8s', issuer: 'https://kubernetes.default.svc', jwks: '/etc/berth/k8s-jwks.json', audience: 'berth', algorithms: ['RS256'], rules: [{ claims: { 'kubernetes.io/namespace': 'ci', sub: 'system:serviceaccount:ci:*' }, repositories: ['ci/**'], actions: ['pull'] }] }] } },
      'test',
    );
    assert.deepEqual(k8s.auth!.federation![0].rules[0].claims, { 'kubernetes.io/namespace': 'ci', sub: 'system:serviceaccount:ci:*' });
  });

  it('names the key of each mistake', () => {
    const has = (list: string[], prefix: string, text?: RegExp) => assert.ok(list.some((p) => p.startsWith(prefix) && (!text || text.test(p))), `${prefix} in ${JSON.stringify(list)}`);
    has(problems([GITHUB], false), 'auth.federation:', /set auth\.htpasswd/);
    has(problems([{ ...GITHUB, jwksuri: undefined }]), 'auth.federation.0.jwksuri:', /one of jwksuri .* and jwks/);
    has(problems([{ ...GITHUB, jwks: '/j' }]), 'auth.federation.0.jwksuri:', /one of jwksuri/);
    has(problems([{ ...GITHUB, jwksuri: 'http://keys.example.com/jwks' }]), 'auth.federation.0.jwksuri:', /https/);
    has(problems([{ ...GITHUB, audience: undefined }]), 'auth.federation.0.audience:');
    has(problems([{ ...GITHUB, algorithms: ['HS256'] }]), 'auth.federation.0.algorithms.0:');
    has(problems([{ ...GITHUB, rules: [] }]), 'auth.federation.0.rules:');
    has(problems([{ ...GITHUB, rules: [{ claims: {}, repositories: ['**'], actions: ['pull'] }] }]), 'auth.federation.0.rules.0.claims:', /every token of the issuer/);
    has(problems([{ ...GITHUB, rules: [{ claims: { sub: 'x' }, repositories: ['Acme/*'], actions: ['pull'] }] }]), 'auth.federation.0.rules.0.repositories.0:');
    has(problems([{ ...GITHUB, rules: [{ claims: { sub: 'x' }, repositories: ['a'], actions: ['write'] }] }]), 'auth.federation.0.rules.0.actions.0:');
    has(problems([{ ...GITHUB, rules: [{ claims: { sub: 'x' }, repositories: ['a'], actions: ['pull'], extra: 1 }] }]), 'auth.federation.0.rules.0.extra:', /unknown key/);
    has(problems([GITHUB, { ...GITHUB, name: 'other' }]), 'auth.federation.1.issuer:', /twice/);
    has(problems([{ ...GITHUB, name: 'ci' }, { ...GITHUB, issuer: 'https://gitlab.com', name: 'ci' }]), 'auth.federation.1.name:', /twice/);
    has(problems([{ ...GITHUB, name: 'git hub' }]), 'auth.federation.0.name:');
  });

  it('takes the examples of docs/configuration.md as they are', async () => {
    const doc = await readFile(new URL('../../docs/configuration.md', import.meta.url), 'utf8');
    const section = doc.slice(doc.indexOf('### Workload identity federation'), doc.indexOf('## S3 storage'));
    const examples = [...section.matchAll(/```yaml\n(auth:[\s\S]*?)```/g)].map((m) => parseYAML(m[1]) as { auth: Record<string, unknown> });
    assert.equal(examples.length, 3);
    for (const example of examples) {
      const config = validateConfig({ ...base, ...example }, 'docs');
      assert.ok(config.auth!.federation!.length > 0);
    }
  });

  it('refuses at start-up a JWKS file that cannot be read or holds a private key, naming the key', async () => {
    const logger = pino({ level: 'silent' });
    await writeFile(join(dir, 'htpasswd'), '');
    const start = (jwks: string) => createApp(validateConfig({ ...base, auth: { htpasswd: { path: join(dir, 'htpasswd') }, federation: [{ ...GITHUB, jwksuri: undefined, jwks }] } }, 'test'), { logger });
    await assert.rejects(start(join(dir, 'none.json')), (err: Error) => err instanceof ConfigError && /cannot read auth\.federation\.0\.jwks .*none\.json/.test(err.message));
    await writeFile(join(dir, 'private.json'), JSON.stringify({ keys: [{ kty: 'oct', k: 'c2VjcmV0', kid: 'x' }] }));
    await assert.rejects(start(join(dir, 'private.json')), (err: Error) => err instanceof ConfigError && /auth\.federation\.0\.jwks .*private\.json: key x is not a public RSA, EC or OKP key/.test(err.message));
  });
});
