/**
 * Password guessing (issue 18): failed logins are limited per user and per client address before
 * the password is checked. Once limited, a guess answers 429 whatever the password (the right one
 * too: a 429 says nothing about it) and costs no bcrypt; another user from the same address is
 * limited too, and the same user from another address (127.0.0.2) as well. Basic auth and the
 * built-in issuer's password grant.
 */
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import bcrypt from 'bcryptjs';
import { basic, writeHtpasswd } from '../helpers/auth.js';
import { startBerth, type TestRegistry } from '../helpers/berth.js';

/** GET /v2/ with Basic credentials, from `localAddress`; the status and Retry-After */
function login(registry: TestRegistry, user: string, password: string, localAddress = '127.0.0.1'): Promise<{ status: number; retryAfter?: string }> {
  return new Promise((resolve, reject) => {
    const req = request(`${registry.url}/v2/`, { headers: { authorization: basic(user, password) }, localAddress }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'] as string | undefined }));
    });
    req.on('error', reject);
    req.end();
  });
}

describe('failed logins are limited before the password is checked', () => {
  let dir: string;
  let registry: TestRegistry;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'berth-guard-'));
    await writeHtpasswd(join(dir, 'htpasswd'), { alice: 'right-pw', bob: 'bob-pw', carol: 'carol-pw' }, 4);
    registry = await startBerth({ auth: { htpasswd: { realm: 'berth', path: join(dir, 'htpasswd') } } });
  });
  after(async () => {
    await registry?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('after 10 wrong passwords: 429 with Retry-After whatever the password, no bcrypt; the address and the user are both limited', async (t) => {
    assert.equal((await login(registry, 'alice', 'right-pw')).status, 200);
    for (let i = 0; i < 10; i++) assert.equal((await login(registry, 'alice', `guess-${i}`)).status, 401, `guess ${i}`);
    const compare = t.mock.method(bcrypt, 'compare');
    const wrong = await login(registry, 'alice', 'guess-10');
    assert.equal(wrong.status, 429);
    assert.ok(Number(wrong.retryAfter) >= 1, `Retry-After ${wrong.retryAfter}`);
    assert.equal((await login(registry, 'alice', 'right-pw')).status, 429, 'the right password is refused the same way: a 429 reveals nothing');
    assert.equal((await login(registry, 'bob', 'bob-pw')).status, 429, 'another user from the same address');
    assert.equal(compare.mock.callCount(), 0, 'no bcrypt while limited');
    compare.mock.restore();
    assert.equal((await login(registry, 'alice', 'right-pw', '127.0.0.2')).status, 429, 'the same user from another address');
    assert.equal((await login(registry, 'carol', 'carol-pw', '127.0.0.2')).status, 200, 'others from another address are not');
  });
});
