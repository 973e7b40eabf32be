/** The parts of single sign-on that need no provider: group subjects in auth.access, auth.oidc's configuration, the sealed cookies, the audit of a failed sign-in. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import type { AuditRecord } from '../../src/audit/record.js';
import { OidcSignIn } from '../../src/auth/oidc/sign-in.js';
import { SignInError } from '../../src/auth/oidc/sign-in-error.js';
import { cookieValue, Sealer } from '../../src/auth/oidc/seal.js';
import { AccessPolicy } from '../../src/auth/policy.js';
import { validateConfig } from '../../src/config/load.js';
import { configProblems } from '../helpers/config.js';
import { ManualClock } from '../helpers/manual-clock.js';

const pull = (name: string) => ({ type: 'repository' as const, name, action: 'pull' });
const del = (name: string) => ({ type: 'repository' as const, name, action: 'delete' });

describe('auth.access group subjects', () => {
  const policy = new AccessPolicy({
    '**': { 'group:admins': ['pull', 'push', 'delete'] },
    'platform/*': { 'group:platform': ['pull', 'delete'], alice: ['push'], '*': ['pull'] },
    'platform/secret': { 'group:security': ['pull'] },
  });

  it('a user gets the union of their entry, their groups\' entries and `*` of the most specific rule', () => {
    assert.deepEqual([...policy.actions('alice', 'platform/api', ['platform'])].sort(), ['delete', 'pull', 'push']);
    assert.deepEqual([...policy.actions('bob', 'platform/api', [])], ['pull']);
    assert.deepEqual([...policy.actions('bob', 'platform/api', ['platform'])].sort(), ['delete', 'pull']);
  });

  it('the most specific glob decides alone: a group of a broader rule gets nothing there', () => {
    assert.equal(policy.allows('root', pull('platform/secret'), ['admins']), false);
    assert.equal(policy.allows('root', pull('platform/api'), ['admins']), true, '`*` of platform/* lets any signed-in user pull');
    assert.equal(policy.allows('root', del('platform/api'), ['admins']), false);
    assert.equal(policy.allows('sec', pull('platform/secret'), ['security']), true);
    assert.equal(policy.allows('root', del('other/thing'), ['admins']), true);
  });

  it('without groups (htpasswd users) only the user\'s own entry and `*` count; a user named like a group is no member', () => {
    assert.equal(policy.allows('root', del('other/thing')), false);
    assert.equal(policy.allows('group:admins', del('other/thing')), false);
    assert.equal(policy.allows(undefined, pull('platform/api'), ['platform']), false, 'anonymous has no groups');
    assert.equal(policy.pullsEverything('root', ['admins']), false, 'platform/secret is not theirs');
  });
});

describe('auth.oidc configuration', () => {
  const base = { version: '0.1', storage: { inmemory: {} } };
  const oidc = { issuer: 'https://id.example.com/realms/acme', clientid: 'berth', clientsecret: 's3cret' };
  const problems = (auth: Record<string, unknown>) => configProblems(() => validateConfig({ ...base, auth }, 'test'));

  it('takes the provider with defaults for scopes, claims, session and refresh', () => {
    const config = validateConfig({ ...base, auth: { htpasswd: { path: '/etc/berth/htpasswd' }, oidc } }, 'test');
    assert.deepEqual(config.auth?.oidc, {
      ...oidc,
      scopes: ['openid', 'profile', 'email'],
      userclaim: 'preferred_username',
      groupsclaim: 'groups',
      sessionlifetime: 8 * 3_600_000,
      groupsrefresh: 5 * 60_000,
    });
  });

  it('names the key of each mistake', () => {
    const found = problems({
      htpasswd: { path: '/etc/berth/htpasswd' },
      oidc: { issuer: 'http://id.example.com', clientid: 'berth', scopes: ['profile'], redirecturl: 'https://registry.example.com/callback', groupsrefresh: '0' },
    });
    assert.ok(found.some((p) => p.startsWith('auth.oidc.issuer:') && /https/.test(p)), found.join('\n'));
    assert.ok(found.some((p) => p.startsWith('auth.oidc.clientsecret:') && /clientsecretfile/.test(p)), found.join('\n'));
    assert.ok(found.some((p) => p.startsWith('auth.oidc.scopes:') && /openid/.test(p)), found.join('\n'));
    assert.ok(found.some((p) => p.startsWith('auth.oidc.redirecturl:') && /\/ui\/callback/.test(p)), found.join('\n'));
    assert.ok(found.some((p) => p.startsWith('auth.oidc.groupsrefresh:')), found.join('\n'));
    assert.ok(problems({ oidc }).some((p) => p.startsWith('auth.oidc:') && /auth.htpasswd or auth.token/.test(p)));
    assert.deepEqual(problems({ htpasswd: { path: '/x' }, oidc: { ...oidc, clientsecretfile: '/run/secret' } }).filter((p) => p.startsWith('auth.oidc')).length, 1);
  });

  it('takes plain http only for a provider on a loopback address', () => {
    const config = validateConfig({ ...base, auth: { htpasswd: { path: '/x' }, oidc: { ...oidc, issuer: 'http://127.0.0.1:8080' } } }, 'test');
    assert.equal(config.auth?.oidc?.issuer, 'http://127.0.0.1:8080');
  });

  it('checks the subjects of auth.access', () => {
    const found = problems({ htpasswd: { path: '/x' }, access: { '**': { 'group:': ['pull'], 'team:x': ['pull'], 'group:ok': ['pull'], '*': ['pull'] } } });
    assert.equal(found.length, 2, found.join('\n'));
    assert.ok(found.every((p) => p.startsWith('auth.access.**') && /group:NAME/.test(p)), found.join('\n'));
  });
});

describe('sealed cookies', () => {
  const sealer = new Sealer('shared-secret');

  it('opens what any instance with the same secret sealed, under the same name only', () => {
    const sealed = sealer.seal('berth_session', { user: 'alice' });
    assert.deepEqual(new Sealer('shared-secret').open('berth_session', sealed), { user: 'alice' });
    assert.equal(new Sealer('another-secret').open('berth_session', sealed), undefined);
    assert.equal(sealer.open('berth_signin', sealed), undefined, 'a cookie is not accepted as another');
    assert.equal(sealed.includes('alice'), false, 'the content is not readable');
    const bytes = Buffer.from(sealed, 'base64url');
    bytes[15] ^= 1;
    assert.equal(sealer.open('berth_session', bytes.toString('base64url')), undefined);
    assert.equal(sealer.open('berth_session', 'short'), undefined);
  });

  it('finds a cookie in the header', () => {
    assert.equal(cookieValue('a=1; berth_session=xyz; b=2', 'berth_session'), 'xyz');
    assert.equal(cookieValue('xberth_session=1', 'berth_session'), undefined);
  });
});

describe('sign-in audit', () => {
  it('records a failed sign-in with the address and the reason', async () => {
    const records: AuditRecord[] = [];
    const signIn = new OidcSignIn(
      { issuer: 'https://id.example.com', clientid: 'berth', clientsecret: 's', scopes: ['openid'], userclaim: 'preferred_username', groupsclaim: 'groups', sessionlifetime: 3_600_000, groupsrefresh: 300_000 },
      { secret: 'shared-secret', clock: new ManualClock(), logger: pino({ level: 'silent' }), audit: { record: (r) => records.push(r) } },
    );
    const where = { protocol: 'https', host: 'registry.example.com', prefix: '', address: '192.0.2.7' };
    await assert.rejects(signIn.finish(where, '?code=abc&state=xyz', undefined), (err: unknown) => {
      assert.ok(err instanceof SignInError);
      assert.match(err.cookies[0], /^berth_signin=; Path=\/ui\/callback; Max-Age=0; HttpOnly; SameSite=Lax; Secure$/);
      return true;
    });
    assert.deepEqual(records, [{ actor: undefined, address: '192.0.2.7', action: 'sign-in', outcome: 'failed', detail: 'no sign-in is in progress in this browser, or it took longer than 10 minutes: start again' }]);
  });

  it('marks the cookies Secure behind a proxy that ends TLS (an https redirecturl), not over plain http', async () => {
    const options = { issuer: 'https://id.example.com', clientid: 'berth', clientsecret: 's', scopes: ['openid'], userclaim: 'preferred_username', groupsclaim: 'groups', sessionlifetime: 3_600_000, groupsrefresh: 300_000 };
    const context = { secret: 'shared-secret', clock: new ManualClock(), logger: pino({ level: 'silent' }) };
    const where = { protocol: 'http', host: 'registry.example.com', prefix: '/r', address: '192.0.2.7' };
    assert.equal(new OidcSignIn({ ...options, redirecturl: 'https://registry.example.com/r/ui/callback' }, context).signOut(where), 'berth_session=; Path=/r; Max-Age=0; HttpOnly; SameSite=Lax; Secure');
    assert.equal(new OidcSignIn(options, context).signOut(where), 'berth_session=; Path=/r; Max-Age=0; HttpOnly; SameSite=Lax');
  });
});
