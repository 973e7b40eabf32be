/**
 * Garbage collection of many repositories: 1,000 repositories and 9,001 blobs on the filesystem
 * (written straight to disk, test/helpers/gc-fixture.ts), collected by `berth garbage-collect` as
 * a process; the blobs of the deleted images go, every other stays, and the peak RSS is reported.
 * 10,000 repositories, and the memory against a tenth of that, are the bench's gc-scale row
 * (bench/lib/gc.ts; `BENCH_ONLY=gc-scale npm run bench`).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { REPO_ROOT } from '../helpers/berth-process.js';
import { countBlobs, writeGcFixture } from '../helpers/gc-fixture.js';

const run = promisify(execFile);

/** peak RSS in MiB of `berth garbage-collect` on `root`, read from the kernel when it ends */
async function collect(root: string, dir: string): Promise<{ peakMiB: number; summary: string }> {
  const config = join(dir, `config-${Date.now()}.yml`);
  await writeFile(config, `version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: ${root}\n  maintenance:\n    readonly:\n      enabled: true\n`);
  // peak.cjs (written by the test) prints the process's VmHWM as it exits
  const child = await run(process.execPath, ['--import', 'tsx', '--require', join(dir, 'peak.cjs'), 'src/cli.ts', 'garbage-collect', '--quiet', config], { cwd: REPO_ROOT, maxBuffer: 64 << 20 });
  const peak = /PEAK (\d+)/.exec(child.stderr);
  assert.ok(peak, child.stderr);
  return { peakMiB: Number(peak[1]) / 1024, summary: child.stdout.trim() };
}

describe('garbage collection at scale', () => {
  let dir: string;
  after(() => rm(dir, { recursive: true, force: true }));

  it('1,000 repositories, 9,001 blobs: deletes exactly the deleted images\' blobs, reports its peak RSS', { timeout: 600_000 }, async () => {
    dir = await mkdtemp(join(tmpdir(), 'berth-gc-scale-'));
    await writeFile(join(dir, 'peak.cjs'), `process.on('exit', () => { const m = /VmHWM:\\s+(\\d+)/.exec(require('fs').readFileSync('/proc/self/status', 'utf8')); process.stderr.write('PEAK ' + m[1] + '\\n'); });\n`);
    const results: string[] = [];
    for (const repositories of [1000]) {
      const root = join(dir, `r${repositories}`);
      const fixture = await writeGcFixture(root, repositories);
      assert.equal(fixture.blobs, repositories * 9 + 1);
      const started = Date.now();
      const { peakMiB, summary } = await collect(root, dir);
      const seconds = (Date.now() - started) / 1000;
      // each deleted image leaves its config, its own layer and its manifest: 3 blobs per repository
      assert.equal(await countBlobs(root), fixture.blobs - repositories * 3, summary);
      assert.match(summary, new RegExp(`${repositories} repositories, ${repositories * 2} manifests kept`));
      results.push(`${repositories} repositories / ${fixture.blobs} blobs: ${seconds.toFixed(1)} s, peak RSS ${peakMiB.toFixed(0)} MiB`);
      await rm(root, { recursive: true, force: true });
    }
    console.log(`# garbage-collect scale: ${results.join('; ')}`);
  });
});
