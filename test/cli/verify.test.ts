/**
 * `berth verify`: a clean root passes (exit 0); planted damage (a blob whose bytes changed, a
 * deleted blob still linked and referenced, a revision without content, a tag naming nothing) is
 * reported (exit 1); `--fix` moves aside only what is provably broken, after which only the
 * references nobody can repair are left. On the filesystem and on S3 (Ceph).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import type { Digest } from '../../src/registry/digest.js';
import * as layout from '../../src/registry/layout.js';
import { writeLink } from '../../src/registry/links.js';
import { unlessMissing } from '../../src/storage/driver.js';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { stopSharedCeph } from '../helpers/ceph.js';
import { buildImage, pushImageOK, type Image } from '../helpers/images.js';

const run = promisify(execFile);
const cli = ['--import', 'tsx', 'src/cli.ts'];

interface Outcome {
  code: number;
  stdout: string;
}

for (const driver of ['filesystem', 's3'] as const) {
  describe(`berth verify (${driver})`, () => {
    let registry: TestRegistry;
    let dir: string;
    let config: string;
    let broken: Image;
    let gone: Image;

    const verify = async (...args: string[]): Promise<Outcome> => {
      try {
        const { stdout } = await run(process.execPath, [...cli, 'verify', ...args, config], { timeout: 120_000, env: { ...process.env, AWS_CA_BUNDLE: '' } });
        return { code: 0, stdout };
      } catch (err) {
        const e = err as { code: number; stdout: string; stderr: string };
        if (typeof e.code !== 'number') throw err;
        return { code: e.code, stdout: e.stdout + e.stderr };
      }
    };

    before(async () => {
      registry = await startBerth({}, { driver });
      dir = await mkdtemp(join(tmpdir(), 'berth-verify-'));
      config = join(dir, 'config.yml');
      const storage = driver === 's3' ? { s3: registry.s3 } : { filesystem: { rootdirectory: registry.root } };
      await writeFile(config, stringify({ version: '0.1', log: { level: 'error' }, storage }));
      await pushImageOK(registry.url, 'app/clean', buildImage('oci-index'), 'v1');
      broken = await pushImageOK(registry.url, 'app/broken', buildImage('docker-v2'), 'v1');
      gone = await pushImageOK(registry.url, 'app/gone', buildImage('docker-v2'), 'v1');
    });
    after(async () => {
      await registry?.stop();
      if (dir) await rm(dir, { recursive: true, force: true });
      if (driver === 's3') await stopSharedCeph();
    });

    it('finds no damage in a root written by pushes (exit 0)', async () => {
      const { code, stdout } = await verify();
      assert.equal(code, 0, stdout);
      assert.match(stdout, /verify: 3 repositories, \d+ manifests, \d+ blobs \(\d+ bytes\) checked: no damage found/);
    });

    it('reports planted damage (exit 1); --fix moves aside what is provably broken, and what cannot be repaired stays reported', async () => {
      const d = registry.app.driver;
      const layer = broken.blobs[1].digest as Digest; // config first, then layers
      await d.putContent(layout.blobData(layer), randomBytes(64)); // bytes changed under the name
      const config = gone.blobs[0].digest as Digest;
      await d.delete(layout.blobDir(config)); // deleted, still linked and referenced
      const ghost = `sha256:${randomBytes(32).toString('hex')}` as Digest;
      await writeLink(d, layout.manifestRevisionLink('app/gone', ghost), ghost); // a revision without content
      await writeLink(d, layout.tagCurrentLink('app/gone', 'phantom'), `sha256:${randomBytes(32).toString('hex')}` as Digest);

      const found = await verify();
      assert.equal(found.code, 1, found.stdout);
      for (const line of [
        `damaged: blob ${layer}: its bytes hash to sha256:`,
        `damaged: app/gone: layer link ${config} names a blob that is not stored`,
        `damaged: app/gone: manifest ${gone.digest} references blob ${config}, which is not stored`,
        `damaged: app/gone: manifest ${ghost} has no content under blobs/`,
        'damaged: app/gone: tag phantom names manifest sha256:',
      ]) assert.ok(found.stdout.includes(line), `${line}\n---\n${found.stdout}`);
      assert.match(found.stdout, /checked: 5 damaged/);

      const fixed = await verify('--fix');
      assert.equal(fixed.code, 1);
      // the changed blob goes first; its layer link then names nothing and goes too
      assert.match(fixed.stdout, /checked: 7 damaged, 5 moved aside to /);
      const quarantined = (path: string) => `${layout.BERTH_STATE}/verify/quarantine${path.slice(layout.ROOT.length)}`;
      assert.ok(await unlessMissing(d.stat(quarantined(layout.blobData(layer)))), 'the changed blob is kept aside');
      assert.equal(await unlessMissing(d.stat(layout.blobData(layer))), undefined);

      const after = await verify();
      assert.equal(after.code, 1, 'the manifests still lack their blobs');
      assert.ok(!after.stdout.includes('moved aside'));
      assert.ok(after.stdout.includes(`damaged: app/broken: manifest ${broken.digest} references blob ${layer}, which is not linked into the repository`), after.stdout);
      assert.ok(after.stdout.includes(`damaged: app/gone: manifest ${gone.digest} references blob ${config}, which is not linked into the repository`), after.stdout);
      assert.match(after.stdout, /checked: 2 damaged/);
      const repo = await verify('--repository', 'app/clean');
      assert.equal(repo.code, 0, repo.stdout);
      assert.match(repo.stdout, /verify: 1 repositories/);
    });
  });
}
