/**
 * Scripts and cron jobs written for Distribution: `garbage-collect`'s flag forms of Go's flag
 * packages (`--delete-untagged=true`, `--dry-run=true`, `-m`, `-m=false`), and an unknown command
 * named as such.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { parseCollectArgs } from '../../src/cli/garbage-collect-args.js';

const run = promisify(execFile);
const cli = ['--import', 'tsx', 'src/cli.ts'];

describe('garbage-collect: the flag forms of Distribution', () => {
  it('takes --flag=true, --flag=false and -f=VALUE with the values of Go strconv.ParseBool', () => {
    assert.deepEqual(parseCollectArgs(['--delete-untagged=true', '--dry-run=true', 'c.yml']), { dryRun: true, deleteUntagged: true, quiet: false, retention: false, file: 'c.yml' });
    assert.deepEqual(parseCollectArgs(['-m', 'c.yml']), { dryRun: false, deleteUntagged: true, quiet: false, retention: false, file: 'c.yml' });
    assert.deepEqual(parseCollectArgs(['-m=1', '-d=T', 'c.yml']), { dryRun: true, deleteUntagged: true, quiet: false, retention: false, file: 'c.yml' });
    assert.deepEqual(parseCollectArgs(['--delete-untagged=false', '--dry-run=FALSE', 'c.yml']), { dryRun: false, deleteUntagged: false, quiet: false, retention: false, file: 'c.yml' });
  });

  it('refuses a value Go would refuse, and a value for an option that is not boolean stays as it was', () => {
    assert.equal(parseCollectArgs(['--delete-untagged=yes', 'c.yml']), '--delete-untagged takes true or false, got "yes"');
    assert.equal(parseCollectArgs(['--bogus=true', 'c.yml']), 'unknown flag --bogus');
    assert.deepEqual(parseCollectArgs(['--', '--dry-run=true']), { dryRun: false, deleteUntagged: false, quiet: false, retention: false, file: '--dry-run=true' });
  });

  describe('the command', () => {
    let dir: string;
    before(async () => {
      dir = await mkdtemp(join(tmpdir(), 'berth-gcflags-'));
      await writeFile(join(dir, 'c.yml'), `version: 0.1\nstorage:\n  filesystem: { rootdirectory: ${join(dir, 'data')} }\n`);
    });
    after(() => rm(dir, { recursive: true, force: true }));

    it('runs with --delete-untagged=true --dry-run=true (exit 0, a dry run needs no read-only mode)', async () => {
      const { stdout } = await run(process.execPath, [...cli, 'garbage-collect', '--delete-untagged=true', '--dry-run=true', join(dir, 'c.yml')], { timeout: 30_000 });
      assert.match(stdout, /garbage-collect/);
    });

    it('exits 2 and names the value for --dry-run=maybe', async () => {
      await assert.rejects(run(process.execPath, [...cli, 'garbage-collect', '--dry-run=maybe', join(dir, 'c.yml')], { timeout: 30_000 }), (err: { code: number; stderr: string }) => {
        assert.equal(err.code, 2);
        assert.match(err.stderr, /--dry-run takes true or false, got "maybe"/);
        return true;
      });
    });
  });
});

describe('an unknown command', () => {
  it('`berth bogus` exits 2 saying the command is unknown', async () => {
    await assert.rejects(run(process.execPath, [...cli, 'bogus'], { timeout: 30_000 }), (err: { code: number; stderr: string }) => {
      assert.equal(err.code, 2);
      assert.match(err.stderr, /^berth: unknown command "bogus"\n/);
      return true;
    });
  });
});
