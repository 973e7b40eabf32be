/** The files in contrib/: the systemd unit passes systemd-analyze, the example configuration loads. */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { promisify } from 'node:util';
import { loadConfig } from '../../src/config/load.js';
import { REPO_ROOT } from '../helpers/berth-process.js';
import { assertTool, needTool } from '../helpers/tools.js';

const run = promisify(execFile);

describe('contrib/', () => {
  it('the systemd unit passes systemd-analyze verify and runs `berth serve /etc/berth/config.yml` as user berth', needTool('systemd-analyze', 'the systemd unit check'), async () => {
    assertTool('systemd-analyze');
    const unit = await readFile(join(REPO_ROOT, 'contrib/systemd/berth.service'), 'utf8');
    assert.match(unit, /^ExecStart=\/usr\/local\/bin\/berth serve \/etc\/berth\/config\.yml$/m);
    assert.match(unit, /^User=berth$/m);
    assert.match(unit, /^ProtectSystem=strict$/m);
    // verify checks that ExecStart's program exists: point it at this checkout's built command
    const dir = await mkdtemp(join(tmpdir(), 'berth-unit-'));
    try {
      const copy = join(dir, 'berth.service');
      await writeFile(copy, unit.replace('ExecStart=/usr/local/bin/berth', `ExecStart=${process.execPath} ${join(REPO_ROOT, 'src/cli.ts')}`));
      const { stdout, stderr } = await run('systemd-analyze', ['verify', copy]);
      assert.equal(`${stdout}${stderr}`.trim(), '', 'no findings');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('the example configuration is valid', async () => {
    const { config, warnings } = await loadConfig(join(REPO_ROOT, 'contrib/config.yml'), {});
    assert.deepEqual(warnings, []);
    assert.equal(config.storage.filesystem?.rootdirectory, '/var/lib/berth');
    assert.equal(config.health?.storagedriver?.enabled, true);
  });
});
