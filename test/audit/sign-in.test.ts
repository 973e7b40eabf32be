/**
 * Sign-ins at the built-in token issuer: a token for a user is a `sign-in` (GET with Basic, POST
 * password and refresh grants), a wrong password a failed one (GET 401 and POST invalid_grant),
 * an anonymous token nothing; a valid token whose scope falls short is a `deny` by its subject.
 */
import assert from 'node:assert/strict';
import { generateKeyPairSync } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { FLUSH_MS } from '../../src/audit/sink.js';
import { AuditLog } from '../../src/metadata/audit.js';
import { openDatabase } from '../../src/metadata/open.js';
import { basic, writeHtpasswd } from '../helpers/auth.js';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { ManualClock } from '../helpers/manual-clock.js';

describe('audit of sign-ins at the token issuer', () => {
  let dir: string;
  let registry: TestRegistry;
  const clock = new ManualClock(Date.now());
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'berth-audit-issuer-'));
    const key = generateKeyPairSync('ec', { namedCurve: 'P-256' });
    await writeFile(join(dir, 'issuer.key'), key.privateKey.export({ type: 'pkcs8', format: 'pem' }));
    await writeHtpasswd(join(dir, 'htpasswd'), { alice: 'alice-pw' });
    registry = await startBerth(
      {
        auth: {
          htpasswd: { realm: 'issuer', path: join(dir, 'htpasswd') },
          token: { service: 'registry', autoredirect: true, issuer: { name: 'berth', enabled: true, signingkey: join(dir, 'issuer.key') } },
          access: { 'team/**': { alice: ['pull'] } },
        },
      },
      { clock },
    );
  });
  after(async () => {
    await registry?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('records sign-ins, failed sign-ins and a scope that fell short, with the user', async () => {
    const token = `${registry.url}/auth/token?service=registry`;
    const got = await fetch(`${token}&scope=repository:team/app:pull,push`, { headers: { authorization: basic('alice', 'alice-pw') } });
    assert.equal(got.status, 200);
    const { token: jwt } = (await got.json()) as { token: string };
    assert.equal((await fetch(`${token}&scope=repository:team/app:pull`)).status, 200, 'anonymous: not recorded');
    assert.equal((await fetch(token, { headers: { authorization: basic('alice', 'guess') } })).status, 401);
    const form = (body: Record<string, string>) => fetch(`${registry.url}/auth/token`, { method: 'POST', body: new URLSearchParams({ service: 'registry', ...body }) });
    const refused = await form({ grant_type: 'password', username: 'alice', password: 'nope' });
    assert.equal(refused.status, 400);
    const offline = await form({ grant_type: 'password', username: 'alice', password: 'alice-pw', access_type: 'offline' });
    assert.equal(offline.status, 200);
    const { refresh_token } = (await offline.json()) as { refresh_token: string };
    assert.equal((await form({ grant_type: 'refresh_token', refresh_token })).status, 200);
    const push = await fetch(`${registry.url}/v2/team/app/blobs/uploads/`, { method: 'POST', headers: { authorization: `Bearer ${jwt}` } });
    assert.equal(push.status, 401);

    await clock.advance(FLUSH_MS);
    const { db } = await openDatabase({ sqlite: { path: join(registry.root!, 'berth/metadata.sqlite') } });
    try {
      const log = new AuditLog(db);
      const rows = (await log.page({}, { newest: false, limit: 100 })).filter((r) => r.action !== 'policy.change');
      assert.deepEqual(
        rows.map((r) => [r.action, r.actor, r.outcome]),
        [
          ['sign-in', 'alice', 'ok'],
          ['sign-in', 'alice', 'failed'],
          ['sign-in', 'alice', 'failed'],
          ['sign-in', 'alice', 'ok'],
          ['sign-in', 'alice', 'ok'],
          ['deny', 'alice', 'denied'],
        ],
      );
      assert.deepEqual([rows[5].repository, rows[5].detail], ['team/app', 'POST the token does not grant repository:team/app:push']);
    } finally {
      await db.destroy();
    }
  });
});
