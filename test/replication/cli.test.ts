/** `berth replicate`: its misuse and the rules it refuses to run, each with a message that says what to do. */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { stringify } from 'yaml';

const run = promisify(execFile);
const berth = (args: string[]) =>
  run(process.execPath, ['--import', 'tsx', 'src/cli.ts', ...args], { cwd: process.cwd() }).then(
    ({ stdout, stderr }) => ({ code: 0, stdout, stderr }),
    (err: { code: number; stdout: string; stderr: string }) => ({ code: err.code, stdout: err.stdout, stderr: err.stderr }),
  );

describe('berth replicate', () => {
  let dir: string;
  let config: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'berth-replicate-cli-'));
    config = join(dir, 'config.yml');
    await writeFile(
      config,
      stringify({
        version: '0.1',
        storage: { filesystem: { rootdirectory: join(dir, 'root') } },
        replication: [
          { name: 'upstream', pull: { url: 'http://127.0.0.1:9' }, repositories: ['lib/**'] },
          { name: 'dr', push: { url: 'http://127.0.0.1:9' }, repositories: ['**'] },
        ],
      }),
    );
  });
  after(() => rm(dir, { recursive: true, force: true }));

  it('answers misuse with the usage (exit 2)', async () => {
    const res = await berth(['replicate', 'go']);
    assert.equal(res.code, 2);
    assert.match(res.stderr, /expected "run RULE CONFIG.yml" or "status CONFIG.yml"/);
  });

  it('names the rules when the one asked for does not exist, and refuses a push rule', async () => {
    const unknown = await berth(['replicate', 'run', 'nope', config]);
    assert.equal(unknown.code, 1);
    assert.match(unknown.stderr, /no rule "nope" in replication \(rules: upstream, dr\)/);
    const push = await berth(['replicate', 'run', 'dr', config]);
    assert.equal(push.code, 1);
    assert.match(push.stderr, /rule dr is a push rule: it sends each local push as it happens/);
  });

  it('reports a remote that does not answer as the run\'s failure, and status shows it', async () => {
    const res = await berth(['replicate', 'run', 'upstream', config]);
    assert.equal(res.code, 1);
    assert.match(res.stderr, /^berth replicate: the run of upstream failed: the upstream registry 127\.0\.0\.1:9 is unavailable/m);
    const status = JSON.parse((await berth(['replicate', 'status', config])).stdout) as { rules: { rule: string; lastError?: { message: string }; behind?: number }[] };
    assert.match(status.rules[0].lastError!.message, /unavailable/);
    assert.equal(status.rules[1].behind, 0);
  });
});
