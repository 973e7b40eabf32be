/**
 * The audit log on two berth processes sharing one root (and its SQLite metadata database): a
 * push, a tag move, a mount, a delete, a failed sign-in and a denied request, each recorded once
 * with who, what, when and from where, whichever instance served it; `berth audit export` filters
 * and prints JSON lines; a restart with changed access rules records one `policy.change`.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { basic, writeHtpasswd } from '../helpers/auth.js';
import { startBerthProcess, REPO_ROOT, type BerthProcess } from '../helpers/berth-process.js';
import { buildImage, type Image } from '../helpers/images.js';
import type { AuditRow } from '../../src/metadata/audit.js';

const run = promisify(execFile);

const ALICE = basic('alice', 'alice-secret');
const BOB = basic('bob', 'bob-secret');

async function push(base: string, name: string, image: Image, reference: string, authorization: string): Promise<Response> {
  for (const blob of image.blobs) {
    const res = await fetch(`${base}/v2/${name}/blobs/uploads/?digest=${blob.digest}`, { method: 'POST', body: blob.data, headers: { authorization, 'content-type': 'application/octet-stream' } });
    if (res.status !== 201) return res;
  }
  return fetch(`${base}/v2/${name}/manifests/${reference}`, { method: 'PUT', body: image.body, headers: { authorization, 'content-type': image.mediaType } });
}

describe('audit log on two instances', () => {
  let dir: string;
  let root: string;
  let htpasswd: string;
  let a: BerthProcess | undefined;
  let b: BerthProcess | undefined;
  const access = (extra: Record<string, Record<string, string[]>> = {}) => ({ 'team/**': { alice: ['pull', 'push', 'delete'], bob: ['pull'] }, ...extra });
  const config = (accessRules: Record<string, Record<string, string[]>>) => ({ auth: { htpasswd: { realm: 'test', path: htpasswd }, access: accessRules } });

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'berth-audit-'));
    root = join(dir, 'root');
    htpasswd = join(dir, 'htpasswd');
    await writeHtpasswd(htpasswd, { alice: 'alice-secret', bob: 'bob-secret' });
    a = await startBerthProcess({ root, config: config(access()), readyStatus: 401 });
    b = await startBerthProcess({ root, config: config(access()), readyStatus: 401 });
  });
  after(async () => {
    await a?.stop();
    await b?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  const exportLines = async (...flags: string[]): Promise<AuditRow[]> => {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'audit', 'export', ...flags, a!.configFile], { cwd: REPO_ROOT, timeout: 30_000 });
    return stdout
      .split('\n')
      .filter((line) => line !== '')
      .map((line) => JSON.parse(line) as AuditRow);
  };

  it('records each write, sign-in failure and denial once, with who, what, when and where', async () => {
    const started = new Date().toISOString();
    const first = buildImage('docker-v2', { layers: 1 });
    const second = buildImage('docker-v2', { layers: 1 });
    assert.equal((await push(a!.url, 'team/app', first, 'v1', ALICE)).status, 201);
    // the tag moves, on the other instance
    assert.equal((await push(b!.url, 'team/app', second, 'v1', ALICE)).status, 201);
    const layer = first.blobs.find((blob) => blob.digest !== first.blobs[0].digest) ?? first.blobs[0];
    const mount = await fetch(`${a!.url}/v2/team/other/blobs/uploads/?mount=${layer.digest}&from=team/app`, { method: 'POST', headers: { authorization: ALICE } });
    assert.equal(mount.status, 201);
    const del = await fetch(`${b!.url}/v2/team/app/manifests/${first.digest}`, { method: 'DELETE', headers: { authorization: ALICE } });
    assert.equal(del.status, 202);
    const wrong = await fetch(`${a!.url}/v2/team/app/tags/list`, { headers: { authorization: basic('alice', 'guess') } });
    assert.equal(wrong.status, 401);
    const denied = await fetch(`${b!.url}/v2/team/app/manifests/v1`, { method: 'DELETE', headers: { authorization: BOB } });
    assert.equal(denied.status, 403);
    // anonymous challenges are not sign-ins
    assert.equal((await fetch(`${a!.url}/v2/`)).status, 401);

    // the records are written within a second, and at shutdown: stop both to have every one
    await a!.stop();
    await b!.stop();
    a = await startBerthProcess({ root, config: config(access()), readyStatus: 401 });
    const records = (await exportLines('--since', '1h')).filter((r) => r.at >= started);
    const manifestPushes = records.filter((r) => r.action === 'push' && r.detail?.startsWith('manifest'));
    assert.deepEqual(
      manifestPushes.map((r) => [r.actor, r.repository, r.target, r.detail?.split(' ')[1]]),
      [
        ['alice', 'team/app', 'v1', first.digest],
        ['alice', 'team/app', 'v1', second.digest],
      ],
    );
    const blobPushes = records.filter((r) => r.action === 'push' && r.detail?.startsWith('blob'));
    assert.equal(blobPushes.length, first.blobs.length + second.blobs.length);
    const only = (action: string) => {
      const found = records.filter((r) => r.action === action);
      assert.equal(found.length, 1, `${action}: ${JSON.stringify(found)}`);
      return found[0];
    };
    const mounted = only('mount');
    assert.deepEqual([mounted.actor, mounted.repository, mounted.target, mounted.outcome], ['alice', 'team/other', layer.digest, 'ok']);
    assert.match(mounted.detail!, /from team\/app/);
    const deleted = only('delete');
    assert.deepEqual([deleted.actor, deleted.repository, deleted.target], ['alice', 'team/app', first.digest]);
    const failed = only('sign-in');
    assert.deepEqual([failed.actor, failed.outcome, failed.detail], ['alice', 'failed', 'invalid username or password']);
    const deny = only('deny');
    assert.deepEqual([deny.actor, deny.repository, deny.target, deny.outcome], ['bob', 'team/app', 'v1', 'denied']);
    assert.match(deny.detail!, /^DELETE user "bob" may not/);
    for (const r of records) {
      assert.match(r.address ?? '', /^(::ffff:)?127\.0\.0\.1$/, JSON.stringify(r));
      assert.ok(!Number.isNaN(Date.parse(r.at)) && r.at >= started, r.at);
    }
  });

  it('export filters by repository, actor, action and time', async () => {
    const mounts = await exportLines('--since', '1h', '--repository', 'team/other');
    assert.deepEqual(mounts.map((r) => r.action), ['mount']);
    const bobs = await exportLines('--since', '1h', '--actor', 'bob');
    assert.deepEqual(bobs.map((r) => r.action), ['deny']);
    const deletes = await exportLines('--action', 'delete');
    assert.equal(deletes.length, 1);
    assert.deepEqual(await exportLines('--since', '1h', '--until', '2000-01-01T00:00:00Z'), []);
    const future = new Date(Date.now() + 3_600_000).toISOString();
    assert.deepEqual(await exportLines('--since', future), []);
    await assert.rejects(run(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'audit', 'export', '--since', 'yesterday', a!.configFile], { cwd: REPO_ROOT, timeout: 30_000 }), (err: { code?: number; stderr?: string }) => {
      assert.equal(err.code, 2);
      assert.match(err.stderr ?? '', /--since needs a duration ago such as 24h/);
      return true;
    });
  });

  it('records a change of auth.access once, at the start of the instance that first sees it', async () => {
    const before = (await exportLines('--since', '1h', '--action', 'policy.change')).length;
    assert.equal(before, 1, 'the first start records the configuration it found');
    await a!.stop();
    a = await startBerthProcess({ root, config: config(access({ 'prod/**': { alice: ['pull'] } })), readyStatus: 401 });
    b = await startBerthProcess({ root, config: config(access({ 'prod/**': { alice: ['pull'] } })), readyStatus: 401 });
    const changes = await exportLines('--since', '1h', '--action', 'policy.change');
    assert.equal(changes.length, 2, JSON.stringify(changes));
    assert.equal(changes[1].detail, 'auth.access: added prod/**');
    assert.equal(changes[1].outcome, 'ok');
  });
});
