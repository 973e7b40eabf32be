/**
 * API tokens against a real registry (in this process, SQLite metadata database): Basic
 * credentials with htpasswd and through the built-in issuer, the token's globs and actions, its
 * owner's rights, a wrong secret counted by the failed-login limit, revocation and expiry seen
 * within the cache time, and last uses written in batches. Tokens are created by a second
 * ApiTokens on the same database file (as the command line or another instance would).
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { AuditRecord } from '../../src/audit/record.js';
import { ApiTokens, CACHE_MS, LAST_USE_FLUSH_MS } from '../../src/auth/api-tokens.js';
import { ApiTokenRecords, DuplicateTokenName } from '../../src/metadata/api-tokens.js';
import { openDatabase, type OpenedDatabase } from '../../src/metadata/open.js';
import { basic, writeHtpasswd } from '../helpers/auth.js';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { buildImage, type Image } from '../helpers/images.js';
import { ManualClock } from '../helpers/manual-clock.js';

const USERS = { alice: 'alice-pw', bob: 'bob-pw' };

/** pushes the image's blobs and manifest (tag `t`) with these credentials; the status of the first refusal, or 201 */
async function push(base: string, name: string, image: Image, authorization: string): Promise<{ status: number; body: string }> {
  for (const blob of image.blobs) {
    const res = await fetch(`${base}/v2/${name}/blobs/uploads/?digest=${blob.digest}`, { method: 'POST', body: blob.data, headers: { authorization, 'content-type': 'application/octet-stream' } });
    if (res.status !== 201) return { status: res.status, body: await res.text() };
  }
  const res = await fetch(`${base}/v2/${name}/manifests/t`, { method: 'PUT', body: image.body, headers: { authorization, 'content-type': image.mediaType } });
  return { status: res.status, body: await res.text() };
}

async function status(url: string, authorization: string, method = 'GET'): Promise<{ status: number; body: string }> {
  const res = await fetch(url, { method, headers: { authorization } });
  return { status: res.status, body: await res.text() };
}

describe('API tokens with htpasswd', () => {
  let work: string;
  let registry: TestRegistry;
  let db: OpenedDatabase;
  let tokens: ApiTokens;
  const clock = new ManualClock(Date.now());

  before(async () => {
    work = await mkdtemp(join(tmpdir(), 'berth-api-tokens-'));
    await writeHtpasswd(join(work, 'htpasswd'), USERS);
    registry = await startBerth(
      {
        metadata: { enabled: true },
        auth: {
          htpasswd: { realm: 'berth', path: join(work, 'htpasswd') },
          access: { 'team/*': { alice: ['pull', 'push', 'delete'] }, 'team/app': { alice: ['pull'] }, '**': { '*': ['pull'] } },
          failedlogins: { burst: 5, every: '1h' },
        },
      },
      { clock },
    );
    db = await openDatabase({ sqlite: { path: join(registry.root!, 'berth/metadata.sqlite') } });
    tokens = new ApiTokens(new ApiTokenRecords(db.db), clock);
  });
  after(async () => {
    await registry?.stop();
    await db?.db.destroy();
    if (work) await rm(work, { recursive: true, force: true });
  });

  it('pushes within its glob and actions, and is refused (403) outside them', async () => {
    const { secret, token } = await tokens.create({ name: 'ci', repositories: ['team/*'], actions: ['pull', 'push'] });
    assert.match(secret, /^berth_[A-Za-z0-9_-]{43}$/);
    assert.equal(token.state, 'active');
    const auth = basic('ci', secret);
    assert.equal((await push(registry.url, 'team/web', buildImage('oci-manifest'), auth)).status, 201);
    assert.equal((await status(`${registry.url}/v2/team/web/manifests/t`, auth)).status, 200);
    const outside = await push(registry.url, 'other/web', buildImage('oci-manifest'), auth);
    assert.equal(outside.status, 403);
    assert.match(outside.body, /DENIED/);
    const deleted = await status(`${registry.url}/v2/team/web/manifests/t`, auth, 'DELETE');
    assert.equal(deleted.status, 403, deleted.body);
    // the catalog lists only what the token may pull
    const catalog = (await (await fetch(`${registry.url}/v2/_catalog`, { headers: { authorization: auth } })).json()) as { repositories: string[] };
    assert.deepEqual(catalog.repositories, ['team/web']);
  });

  it('a token a person created does no more than they may: alice only pulls team/app', async () => {
    const { secret } = await tokens.create({ name: 'alice-ci', repositories: ['team/*'], actions: ['pull', 'push'], owner: 'alice' });
    const auth = basic('alice-ci', secret);
    assert.equal((await push(registry.url, 'team/lib', buildImage('oci-manifest'), auth)).status, 201);
    assert.equal((await push(registry.url, 'team/app', buildImage('oci-manifest'), auth)).status, 403);
  });

  it('names a duplicate, a bad glob and bad actions', async () => {
    await assert.rejects(tokens.create({ name: 'ci', repositories: ['**'], actions: ['pull'] }), DuplicateTokenName);
    await assert.rejects(tokens.create({ name: 'x', repositories: ['Team/*'], actions: ['pull'] }), /repository glob "Team\/\*"/);
    await assert.rejects(tokens.create({ name: 'x', repositories: ['**'], actions: ['pull', 'write'] }), /action "write"/);
  });

  it('a password with the prefix but no such token falls through to htpasswd', async () => {
    assert.equal((await status(`${registry.url}/v2/`, basic('nobody', `berth_${'B'.repeat(43)}`))).status, 401);
    assert.equal((await status(`${registry.url}/v2/`, basic('bob', USERS.bob))).status, 200);
  });

  it('revocation is seen within the cache time (another ApiTokens on the database revokes)', async () => {
    const { secret } = await tokens.create({ name: 'revoked', repositories: ['**'], actions: ['pull'] });
    const auth = basic('revoked', secret);
    assert.equal((await status(`${registry.url}/v2/`, auth)).status, 200);
    assert.equal(await tokens.revoke('revoked'), true);
    assert.equal(await tokens.revoke('revoked'), false, 'revoked twice');
    await clock.advance(CACHE_MS);
    const refused = await status(`${registry.url}/v2/`, auth);
    assert.equal(refused.status, 401);
    assert.match(refused.body, /the API token \\"revoked\\" was revoked at/);
  });

  it('an expired token is refused', async () => {
    const { secret } = await tokens.create({ name: 'short', repositories: ['**'], actions: ['pull'], expiresInMs: 60_000 });
    const auth = basic('short', secret);
    assert.equal((await status(`${registry.url}/v2/`, auth)).status, 200);
    await clock.advance(60_000);
    const refused = await status(`${registry.url}/v2/`, auth);
    assert.equal(refused.status, 401);
    assert.match(refused.body, /the API token \\"short\\" expired at/);
    assert.equal((await tokens.list()).find((t) => t.name === 'short')?.state, 'expired');
  });

  it('records the last use, written in a batch', async () => {
    const { secret } = await tokens.create({ name: 'used', repositories: ['**'], actions: ['pull'] });
    assert.equal((await tokens.list()).find((t) => t.name === 'used')?.lastUsed, undefined);
    const usedAt = new Date(clock.now()).toISOString();
    for (let i = 0; i < 5; i++) assert.equal((await status(`${registry.url}/v2/`, basic('used', secret))).status, 200);
    assert.equal((await tokens.list()).find((t) => t.name === 'used')?.lastUsed, undefined, 'not written per request');
    await clock.advance(LAST_USE_FLUSH_MS);
    assert.equal((await tokens.list()).find((t) => t.name === 'used')?.lastUsed, usedAt);
  });

  it('the web interface helpers: a person lists, creates (secret once) and revokes their own tokens, within their rights', async () => {
    const alice = basic('alice', USERS.alice);
    const api = (path: string, init: RequestInit & { authorization: string }) =>
      fetch(`${registry.url}/ui/api/tokens${path}`, { ...init, headers: { authorization: init.authorization, ...(init.body ? { 'content-type': 'application/json' } : {}), ...(init.headers as Record<string, string>) } });
    const create = (authorization: string, body: unknown, headers: Record<string, string> = {}) => api('', { method: 'POST', authorization, body: JSON.stringify(body), headers });

    const made = await create(alice, { name: 'alice-web', repositories: ['team/*'], actions: ['pull', 'push'], expires: 30 });
    assert.equal(made.status, 200);
    const { secret, token } = (await made.json()) as { secret: string; token: { owner: string; expires: string; state: string } };
    assert.match(secret, /^berth_/);
    assert.equal(token.owner, 'alice');
    assert.equal(token.state, 'active');
    assert.equal(Date.parse(token.expires) - clock.now(), 30 * 86_400_000);
    assert.equal((await push(registry.url, 'team/webui', buildImage('oci-manifest'), basic('alice-web', secret))).status, 201);

    const listed = (await (await api('', { authorization: alice })).json()) as { user: string; tokens: { name: string }[] };
    assert.equal(listed.user, 'alice');
    assert.deepEqual(listed.tokens.map((t) => t.name), ['alice-ci', 'alice-web']);
    assert.ok(!JSON.stringify(listed).includes(secret) && !JSON.stringify(listed).includes('secretHash'));
    assert.deepEqual(((await (await api('', { authorization: basic('bob', USERS.bob) })).json()) as { tokens: unknown[] }).tokens, []);

    // outside alice's rights: push on ** (she only pulls there)
    const beyond = await create(alice, { name: 'too-much', repositories: ['**'], actions: ['push'] });
    assert.equal(beyond.status, 403);
    assert.match(await beyond.text(), /you may not push on \\"\*\*\\", so a token of yours may not either/);
    const bad = await create(alice, { name: 'bad', repositories: ['team/*'], actions: ['write'] });
    assert.equal(bad.status, 400);
    assert.match(await bad.text(), /action \\"write\\": the actions are pull, push, delete/);
    const duplicate = await create(alice, { name: 'alice-web', repositories: ['team/*'], actions: ['pull'] });
    assert.equal(duplicate.status, 409);
    assert.match(await duplicate.text(), /exists already/);
    const badGlob = await create(alice, { name: 'g', repositories: ['team/'], actions: ['pull'] });
    assert.equal(badGlob.status, 400);
    // no form from elsewhere, no other origin, no API token
    const form = await fetch(`${registry.url}/ui/api/tokens`, { method: 'POST', headers: { authorization: alice, 'content-type': 'application/x-www-form-urlencoded' }, body: 'name=x' });
    assert.equal(form.status, 400);
    assert.equal((await create(alice, { name: 'o', repositories: ['team/*'], actions: ['pull'] }, { origin: 'https://evil.example' })).status, 403);
    const byToken = await create(basic('alice-web', secret), { name: 't', repositories: ['team/*'], actions: ['pull'] });
    assert.equal(byToken.status, 403);
    assert.match(await byToken.text(), /an API token cannot manage API tokens/);

    assert.equal((await api('/alice-web', { method: 'DELETE', authorization: basic('bob', USERS.bob) })).status, 404);
    assert.equal((await api('/alice-web', { method: 'DELETE', authorization: alice })).status, 200);
    await clock.advance(CACHE_MS);
    assert.equal((await status(`${registry.url}/v2/`, basic('alice-web', secret))).status, 401);
  });

  it('records token.create and token.revoke in the audit sink (actor, target = the token)', async () => {
    const records: AuditRecord[] = [];
    const audited = new ApiTokens(new ApiTokenRecords(db.db), clock, { record: (r) => records.push(r) });
    await audited.create({ name: 'audited', repositories: ['team/*'], actions: ['pull'], owner: 'alice' });
    assert.equal(await audited.revoke('audited', { owner: 'bob' }), false, "bob revokes only his own");
    await audited.revoke('audited', { owner: 'alice' });
    assert.deepEqual(
      records.map((r) => [r.action, r.actor, r.target, r.outcome, r.detail]),
      [
        ['token.create', 'alice', 'audited', 'ok', 'pull on team/*'],
        ['token.revoke', 'alice', 'audited', 'ok', undefined],
      ],
    );
  });

  // last: it leaves this address limited
  it('a wrong secret is refused and counted by the failed-login limit: then even the right one waits', async () => {
    const { secret } = await tokens.create({ name: 'guessed', repositories: ['**'], actions: ['pull'] });
    assert.equal((await status(`${registry.url}/v2/`, basic('guessed', secret))).status, 200);
    const wrong = basic('guessed', `berth_${'A'.repeat(43)}`);
    const answers: number[] = [];
    for (let i = 0; i < 10 && answers.at(-1) !== 429; i++) {
      const refused = await status(`${registry.url}/v2/`, wrong);
      if (refused.status === 401) assert.match(refused.body, /invalid username or password/);
      answers.push(refused.status);
    }
    assert.equal(answers[0], 401);
    assert.equal(answers.at(-1), 429, answers.join(','));
    const limited = await status(`${registry.url}/v2/`, basic('guessed', secret));
    assert.equal(limited.status, 429);
    assert.match(limited.body, /too many failed logins/);
  });
});

describe('API tokens with the built-in token issuer', () => {
  let work: string;
  let registry: TestRegistry;
  let db: OpenedDatabase;
  let tokens: ApiTokens;
  const clock = new ManualClock(Date.now());

  before(async () => {
    work = await mkdtemp(join(tmpdir(), 'berth-api-tokens-issuer-'));
    await writeHtpasswd(join(work, 'htpasswd'), USERS);
    const key = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    await writeFile(join(work, 'issuer.key'), key.privateKey.export({ type: 'pkcs8', format: 'pem' }));
    registry = await startBerth(
      {
        metadata: { enabled: true },
        auth: {
          htpasswd: { realm: 'berth', path: join(work, 'htpasswd') },
          token: { autoredirect: true, service: 'berth', issuer: { name: 'berth', enabled: true, signingkey: join(work, 'issuer.key') } },
        },
      },
      { clock },
    );
    db = await openDatabase({ sqlite: { path: join(registry.root!, 'berth/metadata.sqlite') } });
    tokens = new ApiTokens(new ApiTokenRecords(db.db), clock);
  });
  after(async () => {
    await registry?.stop();
    await db?.db.destroy();
    if (work) await rm(work, { recursive: true, force: true });
  });

  const ask = async (authorization: string, scope: string, extra = '') => {
    const res = await fetch(`${registry.url}/auth/token?service=berth&scope=${encodeURIComponent(scope)}${extra}`, { headers: { authorization } });
    return { status: res.status, body: (await res.json()) as { token?: string; refresh_token?: string; errors?: { message: string }[] } };
  };

  it('issues a token limited to the API token glob and actions, without a refresh token, and refuses it once revoked', async () => {
    const { secret } = await tokens.create({ name: 'robot', repositories: ['team/*'], actions: ['pull'] });
    const granted = await ask(basic('robot', secret), 'repository:team/app:pull,push', '&offline_token=true');
    assert.equal(granted.status, 200);
    assert.equal(granted.body.refresh_token, undefined);
    const claims = JSON.parse(Buffer.from(granted.body.token!.split('.')[1], 'base64url').toString()) as { sub: string; access: unknown };
    assert.equal(claims.sub, 'robot');
    assert.deepEqual(claims.access, [{ type: 'repository', name: 'team/app', actions: ['pull'] }]);
    const outside = await ask(basic('robot', secret), 'repository:other/app:pull');
    assert.deepEqual(JSON.parse(Buffer.from(outside.body.token!.split('.')[1], 'base64url').toString()).access, []);

    const bearer = `Bearer ${granted.body.token}`;
    assert.equal((await status(`${registry.url}/v2/team/app/tags/list`, bearer)).status, 404); // allowed: the repository is unknown
    await tokens.revoke('robot');
    await clock.advance(CACHE_MS);
    const refused = await status(`${registry.url}/v2/team/app/tags/list`, bearer);
    assert.equal(refused.status, 401);
    assert.match(refused.body, /was revoked or expired/);
    const again = await ask(basic('robot', secret), 'repository:team/app:pull');
    assert.equal(again.status, 401);
    assert.match(JSON.stringify(again.body), /was revoked at/);
  });

  it('the OAuth2 password grant takes an API token too; a wrong secret is invalid_grant', async () => {
    const { secret } = await tokens.create({ name: 'oauth', repositories: ['**'], actions: ['pull'] });
    const form = (password: string) =>
      fetch(`${registry.url}/auth/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'password', service: 'berth', username: 'oauth', password, scope: 'repository:x:pull', access_type: 'offline' }) });
    const ok = await form(secret);
    assert.equal(ok.status, 200);
    const body = (await ok.json()) as { refresh_token?: string };
    assert.equal(body.refresh_token, undefined);
    const wrong = await form(`berth_${'C'.repeat(43)}`);
    assert.equal(wrong.status, 400);
    assert.match(await wrong.text(), /invalid_grant|invalid username or password/);
  });

  it('the web interface helpers with Bearer tokens: a 401 names the scope the new token needs, a token for it creates', async () => {
    const bearerFor = async (scope: string) => `Bearer ${(await ask(basic('alice', USERS.alice), scope)).body.token}`;
    const list = await fetch(`${registry.url}/ui/api/tokens`, { headers: { authorization: await bearerFor('') } });
    assert.equal(list.status, 200);
    assert.deepEqual(await list.json(), { user: 'alice', tokens: [] });
    const create = (authorization: string) =>
      fetch(`${registry.url}/ui/api/tokens`, { method: 'POST', headers: { authorization, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'alice-bearer', repositories: ['team/*'], actions: ['push'] }) });
    const challenged = await create(await bearerFor(''));
    assert.equal(challenged.status, 401);
    assert.match(challenged.headers.get('www-authenticate') ?? '', /scope="repository:team\/x:push"/);
    const made = await create(await bearerFor('repository:team/x:push'));
    assert.equal(made.status, 200);
    assert.equal(((await made.json()) as { token: { owner: string } }).token.owner, 'alice');
  });
});

describe('API tokens without the metadata index', () => {
  it('are skipped: Basic credentials go to htpasswd alone', async () => {
    const work = await mkdtemp(join(tmpdir(), 'berth-api-tokens-none-'));
    await writeHtpasswd(join(work, 'htpasswd'), USERS);
    const registry = await startBerth({ metadata: { enabled: false }, auth: { htpasswd: { realm: 'berth', path: join(work, 'htpasswd') } } });
    try {
      assert.equal((await status(`${registry.url}/v2/`, basic('ci', `berth_${'D'.repeat(43)}`))).status, 401);
      assert.equal((await status(`${registry.url}/v2/`, basic('alice', USERS.alice))).status, 200);
    } finally {
      await registry.stop();
      await rm(work, { recursive: true, force: true });
    }
  });
});
