/**
 * `berth token` (the command, as a child process) against two berth instances (child processes)
 * on one storage root and one SQLite metadata database: a token created by the command works on
 * both, and once it is revoked in the database (right after both used it, so both hold it in
 * their cache) both refuse it within 5 s (polled every 100 ms, the time asserted). Also the command's outputs and its errors: duplicate name, bad glob, bad
 * actions, bad expiry, unknown token, no metadata database.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { ApiTokenRecords } from '../../src/metadata/api-tokens.js';
import { AuditLog } from '../../src/metadata/audit.js';
import { openDatabase } from '../../src/metadata/open.js';
import { basic, writeHtpasswd } from '../helpers/auth.js';
import { REPO_ROOT, startBerthProcess, type BerthProcess } from '../helpers/berth-process.js';
import { cleanEnv } from '../helpers/processes.js';

const run = promisify(execFile);

interface Ran {
  code: number;
  stdout: string;
  stderr: string;
}

/** `berth token ...args` */
async function berthToken(...args: string[]): Promise<Ran> {
  try {
    const { stdout, stderr } = await run(process.execPath, ['--import', 'tsx', 'src/cli.ts', 'token', ...args], { cwd: REPO_ROOT, env: cleanEnv({ dropPrefixes: ['REGISTRY_'] }), timeout: 60_000 });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code?: number; stdout?: string; stderr?: string };
    return { code: e.code ?? -1, stdout: e.stdout ?? '', stderr: e.stderr ?? '' };
  }
}

describe('berth token and two instances on one root', () => {
  let work: string;
  let root: string;
  const instances: BerthProcess[] = [];
  let config: string;

  before(async () => {
    work = await mkdtemp(join(tmpdir(), 'berth-token-cli-'));
    root = join(work, 'root');
    await writeHtpasswd(join(work, 'htpasswd'), { alice: 'alice-pw' });
    const overrides = { metadata: { enabled: true }, auth: { htpasswd: { realm: 'berth', path: join(work, 'htpasswd') } } };
    for (let i = 0; i < 2; i++) instances.push(await startBerthProcess({ root, config: overrides, readyStatus: 401 }));
    config = instances[0].configFile;
  });
  after(async () => {
    for (const instance of instances) await instance.stop();
    if (work) await rm(work, { recursive: true, force: true });
  });

  const answer = async (instance: BerthProcess, authorization: string) => (await fetch(`${instance.url}/v2/team/app/tags/list`, { headers: { authorization } })).status;

  it('creates a token both instances accept, lists it, and once revoked both refuse it within 5 s', async (t) => {
    const created = await berthToken('create', '--name', 'ci', '--repository', 'team/*', '--actions', 'pull,push', '--expires', '90d', config);
    assert.equal(created.code, 0, created.stderr);
    const secret = created.stdout.trim();
    assert.match(secret, /^berth_[A-Za-z0-9_-]{43}$/);
    assert.match(created.stderr, /created API token ci: pull,push on team\/\*, created .*, expires .*, never used\. The line above is its secret, shown this once/);
    const auth = basic('ci', secret);
    // 404: authorized, the repository does not exist
    for (const instance of instances) assert.equal(await answer(instance, auth), 404);

    const listed = await berthToken('list', config);
    assert.equal(listed.code, 0, listed.stderr);
    // the instances write last uses every 5 s: it may have come already
    assert.match(listed.stdout, /^ci\tactive\tpull,push on team\/\*, created \S+, expires \S+, (never used|last used \S+)$/m);

    // both instances have the record cached now; revoke in the database the way the command does
    for (const instance of instances) assert.equal(await answer(instance, auth), 404);
    const { db } = await openDatabase({ sqlite: { path: join(root, 'berth/metadata.sqlite') } });
    try {
      assert.equal(await new ApiTokenRecords(db).revoke('ci', new Date().toISOString()), true);
    } finally {
      await db.destroy();
    }
    const since = performance.now();
    const refusedAfter: number[] = [];
    for (const instance of instances) {
      while ((await answer(instance, auth)) !== 401) {
        assert.ok(performance.now() - since < 5000, `instance ${instance.url} still accepts the revoked token after 5 s`);
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      refusedAfter.push(performance.now() - since);
    }
    assert.ok(Math.max(...refusedAfter) < 5000, refusedAfter.join(', '));
    t.diagnostic(`refused after ${refusedAfter.map((ms) => Math.round(ms)).join(' and ')} ms`);
    const body = await (await fetch(`${instances[1].url}/v2/`, { headers: { authorization: auth } })).text();
    assert.match(body, /the API token \\"ci\\" was revoked at/);
    assert.match((await berthToken('list', config)).stdout, /^ci\trevoked\t.*revoked \S+/m);
  });

  it('names its errors: duplicate name, bad glob, bad actions, bad expiry, unknown or revoked token', async () => {
    assert.equal((await berthToken('create', '--name', 'dup', '--repository', '**', '--actions', 'pull', config)).code, 0);
    const duplicate = await berthToken('create', '--name', 'dup', '--repository', '**', '--actions', 'pull', config);
    assert.equal(duplicate.code, 1);
    assert.match(duplicate.stderr, /an API token named "dup" exists already/);
    const glob = await berthToken('create', '--name', 'g', '--repository', 'Team/App', '--actions', 'pull', config);
    assert.equal(glob.code, 2);
    assert.match(glob.stderr, /repository glob "Team\/App": expected a glob such as/);
    const actions = await berthToken('create', '--name', 'a', '--repository', '**', '--actions', 'pull,write', config);
    assert.equal(actions.code, 2);
    assert.match(actions.stderr, /--actions: action "write": the actions are pull, push, delete/);
    const expires = await berthToken('create', '--name', 'e', '--repository', '**', '--actions', 'pull', '--expires', 'soon', config);
    assert.equal(expires.code, 2);
    assert.match(expires.stderr, /--expires needs a duration such as 90d, 12h or 30m, got soon/);
    const missing = await berthToken('create', '--name', 'm', '--actions', 'pull', config);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /--repository is required/);
    const unknown = await berthToken('revoke', 'nobody', config);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /no API token named "nobody"/);
    const revoked = await berthToken('revoke', 'dup', config);
    assert.equal(revoked.code, 0, revoked.stderr);
    assert.match(revoked.stdout, /^revoked API token dup: every instance refuses it within a few seconds$/m);
    const twice = await berthToken('revoke', 'dup', config);
    assert.equal(twice.code, 1);
    assert.match(twice.stderr, /API token "dup" was revoked already/);
    // the command records what it changed in the audit log (the failed attempts change nothing)
    const { db } = await openDatabase({ sqlite: { path: join(root, 'berth/metadata.sqlite') } });
    try {
      const rows = await new AuditLog(db).page({ actor: `cli:${userInfo().username}` }, { newest: false, limit: 100 });
      const dup = rows.filter((r) => r.target === 'dup').map((r) => [r.action, r.outcome]);
      assert.deepEqual(dup, [['token.create', 'ok'], ['token.revoke', 'ok']]);
    } finally {
      await db.destroy();
    }
  });

  it('says so without a metadata database', async () => {
    const file = join(work, 'no-metadata.yml');
    await writeFile(file, stringify({ version: '0.1', storage: { inmemory: {} } }));
    const ran = await berthToken('list', file);
    assert.equal(ran.code, 1);
    assert.match(ran.stderr, /API tokens are kept in the metadata database, and this configuration has none/);
  });
});
