/**
 * The install path: `npm pack` of this checkout, then `npm install -g` of the tarball into a
 * private prefix (dependencies from the npm registry, or npm's cache) gives a working `berth`:
 * its version, and `berth serve` answering on the V2 API with the embedded default storage.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { holdBuildLock } from '../helpers/build-lock.js';
import { freePort } from '../helpers/ports.js';
import { killPid, spawnLogged, waitForHttp } from '../helpers/processes.js';

const run = promisify(execFile);
const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { name: string; version: string };

describe('npm pack + npm install -g of the tarball', () => {
  let dir: string;
  let berth: string;

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'berth-install-'));
    // npm pack builds dist/ (prepare): not beside another test's build
    const release = await holdBuildLock();
    const { stdout } = await run('npm', ['pack', '--pack-destination', dir], { timeout: 300_000, maxBuffer: 16 << 20 }).finally(release);
    const tarball = join(dir, stdout.trim().split('\n').pop()!);
    await run('npm', ['install', '-g', '--prefix', join(dir, 'prefix'), '--no-audit', '--no-fund', tarball], { timeout: 600_000, maxBuffer: 16 << 20 });
    berth = join(dir, 'prefix', 'bin', 'berth');
  });
  after(() => (dir ? rm(dir, { recursive: true, force: true }) : undefined));

  it(`is named ${pkg.name} and installs a berth command that knows its version`, async () => {
    assert.equal(pkg.name, 'berth-registry');
    const { stdout } = await run(berth, ['--version']);
    assert.equal(stdout, `berth ${pkg.version}\n`);
  });

  it('serves the V2 API from the installed command, with its own filesystem storage', async () => {
    const port = await freePort();
    const config = join(dir, 'config.yml');
    await writeFile(config, `version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: ${join(dir, 'data')}\nhttp:\n  addr: 127.0.0.1:${port}\n`);
    const proc = await spawnLogged(berth, ['serve', config], { cwd: dir, label: 'installed berth' });
    try {
      await waitForHttp(`http://127.0.0.1:${port}/v2/`, { process: proc, timeoutMs: 30_000, name: 'installed berth' });
      const res = await fetch(`http://127.0.0.1:${port}/v2/`);
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('docker-distribution-api-version'), 'registry/2.0');
    } finally {
      await killPid(proc, { graceMs: 10_000 });
    }
  });
});
