/** The parts of src/auth/ that need no server: access requests, auth.access, htpasswd, the in-memory bucket. */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile, utimes } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import bcrypt from 'bcryptjs';
import { parseScope } from '../../src/auth/access.js';
import { requiredAccess } from '../../src/http/route-table.js';
import { Htpasswd, HtpasswdError } from '../../src/auth/htpasswd.js';
import { AccessPolicy } from '../../src/auth/policy.js';
import { MemoryRateLimiter } from '../../src/auth/ratelimit.js';
import { parseAccessClaim } from '../../src/auth/token.js';
import { writeHtpasswd } from '../helpers/auth.js';
import { ManualClock } from '../helpers/manual-clock.js';

describe('access requests', () => {
  it('maps method and route to the action', () => {
    const name = 'team/app';
    assert.deepEqual(requiredAccess({ kind: 'base' }, 'GET'), []);
    assert.deepEqual(requiredAccess({ kind: 'catalog' }, 'GET'), [{ type: 'registry', name: 'catalog', action: '*' }]);
    const action = (route: Parameters<typeof requiredAccess>[0], method: string) => requiredAccess(route, method).map((r) => `${r.name}:${r.action}`);
    assert.deepEqual(action({ kind: 'tags', name }, 'GET'), ['team/app:pull']);
    assert.deepEqual(action({ kind: 'manifest', name, reference: 'x' }, 'HEAD'), ['team/app:pull']);
    assert.deepEqual(action({ kind: 'manifest', name, reference: 'x' }, 'PUT'), ['team/app:push']);
    assert.deepEqual(action({ kind: 'manifest', name, reference: 'x' }, 'DELETE'), ['team/app:delete']);
    assert.deepEqual(action({ kind: 'blob', name, digest: 'x' }, 'GET'), ['team/app:pull']);
    assert.deepEqual(action({ kind: 'blob', name, digest: 'x' }, 'DELETE'), ['team/app:delete']);
    assert.deepEqual(action({ kind: 'uploads', name }, 'POST'), ['team/app:push']);
    for (const method of ['GET', 'PATCH', 'PUT', 'DELETE']) assert.deepEqual(action({ kind: 'upload', name, uuid: 'u' }, method), ['team/app:push']);
    assert.deepEqual(action({ kind: 'referrers', name, digest: 'x' }, 'GET'), ['team/app:pull']);
  });

  it('parses scopes, including a type with a class and a name with a port', () => {
    assert.deepEqual(parseScope('repository:team/app:pull,push'), { type: 'repository', name: 'team/app', actions: ['pull', 'push'] });
    assert.deepEqual(parseScope('repository(plugin):a:pull'), { type: 'repository', name: 'a', actions: ['pull'] });
    assert.deepEqual(parseScope('registry:catalog:*'), { type: 'registry', name: 'catalog', actions: ['*'] });
    assert.equal(parseScope('nonsense'), undefined);
    assert.equal(parseScope('repository::pull'), undefined);
  });

  it('reads the access claim and ignores malformed entries', () => {
    assert.deepEqual(parseAccessClaim([{ type: 'repository', name: 'a', actions: ['pull', 3] }, 'x', null, { type: 1 }]), [
      { type: 'repository', name: 'a', actions: ['pull'] },
    ]);
    assert.deepEqual(parseAccessClaim('repository:a:pull'), []);
  });
});

describe('auth.access', () => {
  const policy = new AccessPolicy({
    '**': { admin: ['pull', 'push', 'delete'] },
    'team/*': { '*': ['pull'], writer: ['push'] },
    'team/secret': { admin: ['pull'] },
    'public/**': { anonymous: ['pull'], '*': ['pull'] },
  });
  const actions = (user: string | undefined, name: string) => [...policy.actions(user, name)].sort();

  it('the most specific rule decides, whatever the order of the file (an exact name beats ** listed first)', () => {
    const orders = [
      { '**': { '*': ['pull', 'push'] }, hr: { alice: ['pull'] }, 'team/**': { bob: ['pull'] }, 'team/*': { carol: ['pull'] } },
      { 'team/*': { carol: ['pull'] }, hr: { alice: ['pull'] }, 'team/**': { bob: ['pull'] }, '**': { '*': ['pull', 'push'] } },
    ] as const;
    for (const rules of orders) {
      const p = new AccessPolicy(rules as unknown as ConstructorParameters<typeof AccessPolicy>[0]);
      const of = (user: string, name: string) => [...p.actions(user, name)].sort();
      assert.deepEqual(of('mallory', 'hr'), [], 'hr names no mallory and no `*`: ** does not apply');
      assert.deepEqual(of('alice', 'hr'), ['pull']);
      assert.deepEqual(of('carol', 'team/app'), ['pull'], 'team/* beats team/**');
      assert.deepEqual(of('bob', 'team/app'), []);
      assert.deepEqual(of('bob', 'team/app/sub'), ['pull'], 'only team/** matches two components');
      assert.deepEqual(of('mallory', 'other'), ['pull', 'push']);
    }
  });

  it('the longest matching glob decides alone', () => {
    assert.deepEqual(actions('admin', 'other'), ['delete', 'pull', 'push']);
    assert.deepEqual(actions('admin', 'team/app'), ['pull'], 'team/* names no admin entry: only its `*` entry applies, ** does not');
    assert.deepEqual(actions('admin', 'team/secret'), ['pull']);
    assert.deepEqual(actions('writer', 'team/secret'), []);
  });

  it('a user gets their entry and the `*` entry; `*` is not anonymous', () => {
    assert.deepEqual(actions('writer', 'team/app'), ['pull', 'push']);
    assert.deepEqual(actions('reader', 'team/app'), ['pull']);
    assert.deepEqual(actions(undefined, 'team/app'), []);
    assert.deepEqual(actions(undefined, 'public/a/b'), ['pull']);
  });

  it('`*` stays within one component, `**` spans several', () => {
    assert.deepEqual(actions('reader', 'team/app/sub'), []);
    assert.deepEqual(actions('reader', 'public/x/y/z'), ['pull']);
    assert.deepEqual(actions('reader', 'teamx/app'), []);
  });

  it('without rules, every authenticated user may do everything and anonymous nothing', () => {
    const open = new AccessPolicy(undefined);
    assert.deepEqual([...open.actions('anyone', 'a/b')].sort(), ['delete', 'pull', 'push']);
    assert.deepEqual([...open.actions(undefined, 'a/b')], []);
    assert.equal(open.pullsEverything('anyone'), true);
    assert.equal(policy.pullsEverything('reader'), false);
  });
});

describe('htpasswd', () => {
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'berth-htpasswd-'));
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('verifies bcrypt entries ($2y$, $2a$, $2b$)', async () => {
    const path = join(dir, 'ok');
    await writeHtpasswd(path, { alice: 'wonderland', bob: 'builder' });
    const file = new Htpasswd(path);
    assert.equal(await file.verify('alice', 'wonderland'), true);
    assert.equal(await file.verify('alice', 'builder'), false);
    assert.equal(await file.verify('nobody', 'wonderland'), false);
    assert.equal(file.size, 2);
  });

  it('refuses other hash kinds with the line and a fix', async () => {
    for (const [hash, kind] of [
      ['$apr1$abcdefgh$0123456789abcdefghijkl', 'Apache MD5'],
      ['{SHA}W6ph5Mm5Pz8GgiULbPgzG37mj9g=', 'SHA-1'],
      ['plaintext', 'crypt or plain text'],
    ]) {
      const path = join(dir, 'bad');
      await writeFile(path, `# comment\nalice:${hash}\n`);
      assert.throws(
        () => new Htpasswd(path),
        (err: Error) => err instanceof HtpasswdError && err.message.includes('line 2') && err.message.includes(kind) && err.message.includes('htpasswd -B'),
      );
    }
    assert.throws(() => new Htpasswd(join(dir, 'missing')), /cannot read htpasswd file/);
    await writeFile(join(dir, 'reserved'), 'anonymous:$2y$04$abcdefghijklmnopqrstuOabcdefghijklmnopqrstuvwxyzABCDE\n');
    assert.throws(() => new Htpasswd(join(dir, 'reserved')), /"anonymous" is reserved/);
  });

  it('reloads the file when it changes; a reload with bad lines fails closed: those entries and removed users are refused, the rest apply', async () => {
    const path = join(dir, 'reload');
    await writeHtpasswd(path, { alice: 'one', bob: 'builder', dave: 'diver' });
    const errors: Error[] = [];
    const clock = new ManualClock();
    const file = new Htpasswd(path, (err) => errors.push(err), clock);
    assert.equal(await file.verify('alice', 'one'), true);
    await writeHtpasswd(path, { alice: 'two', bob: 'builder', carol: 'three' });
    await utimes(path, new Date(), new Date(Date.now() + 5000));
    assert.equal(file.has('carol'), false, 'checked at most once a second');
    await clock.advance(1000);
    assert.equal(await file.verify('alice', 'two'), true);
    assert.equal(await file.verify('alice', 'one'), false, 'the remembered login went with the old file');
    assert.equal(await file.verify('carol', 'three'), true);
    assert.equal(await file.verify('dave', 'diver'), false, 'removed');

    // one edit removes carol and breaks alice's line: carol is out, alice refused, bob still in
    const bobLine = (await readFile(path, 'utf8')).split('\n').find((line) => line.startsWith('bob:'))!;
    await writeFile(path, `alice:$apr1$x$y\n${bobLine}\n`);
    await utimes(path, new Date(), new Date(Date.now() + 10_000));
    await clock.advance(1000);
    assert.equal(await file.verify('carol', 'three'), false, 'a user removed in a broken edit loses access');
    assert.equal(await file.verify('alice', 'two'), false, 'a broken entry is refused, not kept from the last version');
    assert.equal(await file.verify('bob', 'builder'), true, 'the good lines apply');
    assert.match(errors[0]?.message ?? '', /1 entries refused until fixed .*line 1: the entry of user "alice" is not a bcrypt hash/);

    // unreadable: every login refused, said once; readable again: back
    await rm(path);
    await clock.advance(1000);
    assert.equal(await file.verify('bob', 'builder'), false);
    await clock.advance(1000);
    assert.equal(file.has('bob'), false);
    assert.equal(errors.length, 2, 'said once while it stays unreadable');
    assert.match(errors[1].message, /cannot read htpasswd file .*every login is refused/);
    await writeHtpasswd(path, { bob: 'builder' });
    await clock.advance(1000);
    assert.equal(await file.verify('bob', 'builder'), true);
  });

  it('a failed login costs about the same whether or not the user exists', async (t) => {
    const path = join(dir, 'timing');
    await writeHtpasswd(path, { alice: 'wonderland' }, 8);
    const file = new Htpasswd(path);
    const compare = t.mock.method(bcrypt, 'compare');
    /** one login, and the hashes bcrypt was run against for it */
    const login = async (user: string, password: string) => {
      const before = compare.mock.callCount();
      const ok = await file.verify(user, password);
      return { ok, hashes: compare.mock.calls.slice(before).map((call) => String(call.arguments[1])) };
    };
    await file.verify('alice', 'wonderland'); // a remembered success must not make failures cheaper

    // the work: one bcrypt at the file's cost (8) either way; without the dummy hash `unknown` runs none
    const known = await login('alice', 'wrong');
    const unknown = await login('nobody', 'wrong');
    assert.deepEqual([known.ok, known.hashes.length, unknown.ok, unknown.hashes.length], [false, 1, false, 1]);
    assert.match(known.hashes[0], /^\$2[aby]\$08\$/);
    assert.match(unknown.hashes[0], /^\$2[aby]\$08\$/, 'the dummy hash has the cost of the file');

    // the time, measured in interleaved pairs so that load on the machine weighs on both alike
    const ratios: number[] = [];
    for (let i = 0; i < 7; i++) {
      let start = performance.now();
      await file.verify('alice', 'wrong');
      const knownMs = performance.now() - start;
      start = performance.now();
      await file.verify('nobody', 'wrong');
      ratios.push((performance.now() - start) / knownMs);
    }
    const median = ratios.sort((a, b) => a - b)[3];
    assert.ok(median > 1 / 3 && median < 3, `unknown/known time ratios ${ratios.map((r) => r.toFixed(2)).join(', ')}`);

    // a repeated correct login is remembered: no bcrypt at all
    assert.deepEqual(await login('alice', 'wonderland'), { ok: true, hashes: [] });
  });
});

describe('token bucket (memory)', () => {
  it('allows a burst, then one request per 1/rate seconds, with Retry-After', async () => {
    let now = 0;
    const limiter = new MemoryRateLimiter({ rate: 0.5, burst: 2 }, () => now);
    assert.deepEqual(await limiter.take('a'), { allowed: true });
    assert.deepEqual(await limiter.take('a'), { allowed: true });
    assert.deepEqual(await limiter.take('a'), { allowed: false, retryAfterSeconds: 2 });
    assert.deepEqual(await limiter.take('b'), { allowed: true }, 'buckets are per key');
    now += 1000;
    assert.deepEqual(await limiter.take('a'), { allowed: false, retryAfterSeconds: 1 });
    now += 1000;
    assert.deepEqual(await limiter.take('a'), { allowed: true });
    now += 60_000;
    assert.deepEqual(await limiter.take('a'), { allowed: true });
    assert.deepEqual(await limiter.take('a'), { allowed: true });
    assert.equal((await limiter.take('a')).allowed, false, 'refills to burst, not beyond');
  });
});
