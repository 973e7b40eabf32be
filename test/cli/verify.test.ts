/**
 * `berth verify`: a clean root passes (exit 0); planted damage (a blob whose bytes changed, a
 * deleted blob still linked and referenced, a revision without content, a tag naming nothing) is
 * reported (exit 1); `--fix` moves aside only what is provably broken, after which only the
 * references nobody can repair are left. On the filesystem and on S3 (Ceph).
 * Leftovers berth documents (an upload's layer link written before its blob's move, the `_layers`
 * links online garbage collection leaves) are reported as leftovers, not damage (exit 0), and
 * `--fix` removes those it can remove safely. Each both as a planted storage state and by the real
 * sequence (an online collection; an upload's completion stopped at its move).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import type { Digest } from '../../src/registry/digest.js';
import * as layout from '../../src/registry/layout.js';
import { pino } from 'pino';
import { createApp } from '../../src/app.js';
import { validateConfig } from '../../src/config/load.js';
import { collectOnline } from '../../src/registry/gc/online.js';
import { writeLink } from '../../src/registry/links.js';
import { LEFTOVER_AGE_MS, verify as verifyCore } from '../../src/registry/verify/index.js';
import { unlessMissing } from '../../src/storage/driver.js';
import { FilesystemDriver } from '../../src/storage/filesystem.js';
import { ForwardingDriver } from '../../src/storage/forwarding.js';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { stopSharedCeph } from '../helpers/ceph.js';
import { pushBlob, randomBlob } from '../helpers/blobs.js';
import { buildImage, pushImageOK, type Image } from '../helpers/images.js';

const run = promisify(execFile);
const cli = ['--import', 'tsx', 'src/cli.ts'];

interface Outcome {
  code: number;
  stdout: string;
}

async function runVerify(config: string, ...args: string[]): Promise<Outcome> {
  try {
    const { stdout } = await run(process.execPath, [...cli, 'verify', ...args, config], { timeout: 120_000, env: { ...process.env, AWS_CA_BUNDLE: '' } });
    return { code: 0, stdout };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    if (typeof e.code !== 'number') throw err;
    return { code: e.code, stdout: e.stdout + e.stderr };
  }
}

/** a berth on `driver` and a configuration file for the command on its storage */
async function berthWithConfig(driver: 'filesystem' | 's3'): Promise<{ registry: TestRegistry; dir: string; config: string }> {
  const registry = await startBerth({}, { driver });
  const dir = await mkdtemp(join(tmpdir(), 'berth-verify-'));
  const config = join(dir, 'config.yml');
  const storage = driver === 's3' ? { s3: registry.s3 } : { filesystem: { rootdirectory: registry.root } };
  await writeFile(config, stringify({ version: '0.1', log: { level: 'error' }, storage }));
  return { registry, dir, config };
}

for (const driver of ['filesystem', 's3'] as const) {
  describe(`berth verify (${driver})`, () => {
    let registry: TestRegistry;
    let dir: string;
    let config: string;
    let broken: Image;
    let gone: Image;

    const verify = (...args: string[]) => runVerify(config, ...args);

    before(async () => {
      ({ registry, dir, config } = await berthWithConfig(driver));
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

for (const driver of ['filesystem', 's3'] as const) {
  describe(`berth verify: leftovers are not damage (${driver})`, () => {
    let registry: TestRegistry;
    let dir: string;
    let config: string;
    before(async () => {
      ({ registry, dir, config } = await berthWithConfig(driver));
    });
    after(async () => {
      await registry?.stop();
      if (dir) await rm(dir, { recursive: true, force: true });
      if (driver === 's3') await stopSharedCeph();
    });

    it('an upload killed between its link and its move: a leftover (exit 0); --fix keeps it while young, removes it when old', async () => {
      const d = registry.app.driver;
      const image = await pushImageOK(registry.url, 'app/pushed', buildImage('docker-v2'), 'v1');
      // the state a kill -9 leaves between an upload's link and its move: the link, the data still in the upload
      const blob = randomBlob(512);
      const uuid = '6f1c2a4e-0d7b-4f4e-9a51-3c1f0e2b8d90';
      await d.putContent(layout.uploadData('app/pushed', uuid), blob.data);
      await d.putContent(layout.uploadStartedAt('app/pushed', uuid), Buffer.from(new Date().toISOString()));
      await writeLink(d, layout.layerLink('app/pushed', blob.digest as Digest), blob.digest as Digest);

      const found = await runVerify(config);
      assert.equal(found.code, 0, found.stdout);
      assert.ok(found.stdout.includes(`leftover: app/pushed: layer link ${blob.digest}, used by no manifest, names a blob that is not stored`), found.stdout);
      assert.ok(!found.stdout.includes('damaged:'), found.stdout);
      assert.match(found.stdout, /checked: no damage found; 1 leftovers \(not damage\)\n/);

      const young = await runVerify(config, '--fix');
      assert.equal(young.code, 0, young.stdout);
      assert.match(young.stdout, /kept: younger than an hour/);
      assert.ok(await unlessMissing(d.stat(layout.layerLink('app/pushed', blob.digest as Digest))), 'a young link stays: its upload may be moving the blob');

      // an hour later (the core's clock; the command reads the real one)
      const lines: string[] = [];
      const later = await verifyCore(d, { fix: true, report: (line) => lines.push(line), now: () => Date.now() + LEFTOVER_AGE_MS + 60_000 });
      assert.deepEqual({ damaged: later.damaged, leftovers: later.leftovers, removed: later.removed }, { damaged: 0, leftovers: 1, removed: 1 });
      assert.match(lines.join('\n'), /; removed$/);
      assert.equal(await unlessMissing(d.stat(layout.layerLink('app/pushed', blob.digest as Digest))), undefined);
      const clean = await runVerify(config);
      assert.equal(clean.code, 0, clean.stdout);
      assert.match(clean.stdout, /checked: no damage found\n/);

      // a link a manifest uses whose blob is gone is still damage
      await d.delete(layout.blobDir(image.blobs[1].digest as Digest));
      const damaged = await runVerify(config);
      assert.equal(damaged.code, 1, damaged.stdout);
      assert.ok(damaged.stdout.includes(`damaged: app/pushed: layer link ${image.blobs[1].digest} names a blob that is not stored`), damaged.stdout);
    });
  });
}

describe('berth verify after online garbage collection (filesystem)', () => {
  let registry: TestRegistry;
  let dir: string;
  let config: string;
  before(async () => {
    ({ registry, dir, config } = await berthWithConfig('filesystem'));
  });
  after(async () => {
    await registry?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('the `_layers` links the collector leaves are leftovers (exit 0), kept while the blobs are in the trash, removed by --fix after', async () => {
    const d = registry.app.driver;
    const kept = await pushImageOK(registry.url, 'app/kept', buildImage('docker-v2'), 'v1');
    const orphans = [randomBlob(300), randomBlob(400), randomBlob(500)];
    for (const blob of orphans) assert.equal((await pushBlob(registry.url, 'app/orphan', blob.data, blob.digest)).status, 201);
    // older than the delay without waiting for it: the blobs' and their use records' times moved back
    const old = new Date(Date.now() - 60_000);
    for (const blob of orphans) {
      for (const path of [layout.blobData(blob.digest as Digest), layout.gcTouch(blob.digest as Digest)]) {
        await utimes(join(registry.root ?? '', path), old, old).catch(() => undefined);
      }
    }
    const first = await collectOnline(d, { delayMs: 10_000, dryRun: false });
    assert.equal(first.blobsTrashed, orphans.length);

    const found = await runVerify(config);
    assert.equal(found.code, 0, found.stdout);
    for (const blob of orphans) assert.ok(found.stdout.includes(`leftover: app/orphan: layer link ${blob.digest}, used by no manifest: online garbage collection moved its blob to the trash`), found.stdout);
    assert.match(found.stdout, /checked: no damage found; 3 leftovers \(not damage\)\n/);
    const fixed = await runVerify(config, '--fix');
    assert.equal(fixed.code, 0, fixed.stdout);
    assert.equal(fixed.stdout.match(/kept while the blob is in the trash/g)?.length, 3, fixed.stdout);

    // a later collection empties the trash; the links, old now, go with --fix
    for (const blob of orphans) {
      await utimes(join(registry.root ?? '', layout.gcTrashDir(blob.digest as Digest), 'trashed'), old, old); // when the collector moved it
      await utimes(join(registry.root ?? '', layout.layerLink('app/orphan', blob.digest as Digest)), new Date(0), new Date(0));
    }
    const second = await collectOnline(d, { delayMs: 10_000, dryRun: false });
    assert.equal(second.blobsPurged, orphans.length);
    const removed = await runVerify(config, '--fix');
    assert.equal(removed.code, 0, removed.stdout);
    assert.match(removed.stdout, /checked: no damage found; 3 leftovers \(not damage\), 3 removed\n/);
    const clean = await runVerify(config);
    assert.match(clean.stdout, /checked: no damage found\n/);
    assert.equal(clean.code, 0);
    assert.ok(await unlessMissing(d.stat(layout.blobData(kept.blobs[1].digest as Digest))));
  });
});

describe('berth verify after an upload cut between its link and its move (filesystem)', () => {
  it('the real completion, stopped where a kill -9 falls: a leftover (exit 0), and the retried upload is whole', async () => {
    const root = await mkdtemp(join(tmpdir(), 'berth-verify-kill-'));
    const config = join(root, 'config.yml');
    const storage = { filesystem: { rootdirectory: join(root, 'data') } };
    await writeFile(config, stringify({ version: '0.1', log: { level: 'error' }, storage }));
    // the process "dies" at its first move into blobs/: that request fails, nothing after it runs
    let killed = false;
    const dying = new (class extends ForwardingDriver {
      override async move(from: string, to: string): Promise<void> {
        if (!killed && to.startsWith(layout.BLOBS)) {
          killed = true;
          throw new Error('killed between the link and the move');
        }
        return super.move(from, to);
      }
    })(new FilesystemDriver({ rootdirectory: join(root, 'data') }));
    const app = await createApp(validateConfig({ version: '0.1', storage, http: { addr: '127.0.0.1:0', secret: 's' } }, 'test'), { logger: pino({ level: 'silent' }), driver: dying });
    try {
      const url = await app.listen({ host: '127.0.0.1', port: 0 });
      const blob = randomBlob(1000);
      assert.equal((await pushBlob(url, 'app/cut', blob.data, blob.digest)).status, 500);
      assert.ok(killed);
      const found = await runVerify(config);
      assert.equal(found.code, 0, found.stdout);
      assert.ok(found.stdout.includes(`leftover: app/cut: layer link ${blob.digest}, used by no manifest, names a blob that is not stored`), found.stdout);
      // the client pushes again; then nothing is left over
      assert.equal((await pushBlob(url, 'app/cut', blob.data, blob.digest)).status, 201);
      const after = await runVerify(config);
      assert.equal(after.code, 0, after.stdout);
      assert.match(after.stdout, /checked: no damage found\n/);
    } finally {
      await app.close();
      await rm(root, { recursive: true, force: true });
    }
  });
});
