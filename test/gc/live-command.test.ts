/**
 * `berth garbage-collect --delete-untagged` on a writable configuration, beside a berth serving
 * the same root (issue 32): the command collects by online collection's protocol, so index pushes
 * that reuse old untagged children and image pushes that reuse old unreferenced blobs, racing
 * it, lose nothing: every acknowledged push is served whole afterwards. What nobody reused goes
 * (the children are deleted, the blobs moved to the trash).
 */
import assert from 'node:assert/strict';
import { mkdtemp, readdir, rm, stat, utimes, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { stringify } from 'yaml';
import type { Digest } from '../../src/registry/digest.js';
import * as layout from '../../src/registry/layout.js';
import { unlessMissing } from '../../src/storage/driver.js';
import { REPO_ROOT } from '../helpers/berth-process.js';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { buildImage, pushContent, pushImageOK, putManifest, type Image } from '../helpers/images.js';
import { runCommand } from './harness.js';
import { servedWhole } from './online-harness.js';

const HOUR = 3_600_000;
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** sets the modification time of every file under `dir` back by `ms` */
async function dateBack(dir: string, ms: number): Promise<void> {
  for (const entry of await readdir(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile()) continue;
    const path = join(entry.parentPath, entry.name);
    const { mtimeMs } = await stat(path);
    await utimes(path, new Date(mtimeMs - ms), new Date(mtimeMs - ms));
  }
}

describe('berth garbage-collect beside a serving berth (filesystem)', () => {
  let berth: TestRegistry;
  let dir: string;
  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'berth-live-gc-'));
    // the instance writes a use every time (a quarter of a 4 ms delay): the files are dated back
    // below, and a record this process skipped as recent would be an hour old on disk
    berth = await startBerth({ storage: { maintenance: { gc: { delay: '4ms' }, uploadpurging: { enabled: false } } } });
  });
  after(async () => {
    await berth?.stop();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('pushes racing the command lose nothing; what nobody reused goes', { timeout: 120_000 }, async () => {
    const name = 'live/race';
    const children: Image[] = [];
    for (let i = 0; i < 12; i++) children.push(await pushImageOK(berth.url, name, buildImage('oci-manifest', { layers: 1, layerSize: 128 })));
    const loose: Image[] = [];
    for (let i = 0; i < 4; i++) {
      const image = buildImage('docker-v2', { layers: 1, layerSize: 128 });
      await pushContent(berth.url, name, image); // blobs only: no manifest references them
      loose.push(image);
    }
    await dateBack(berth.root!, HOUR);

    const file = join(dir, 'config.yml');
    await writeFile(file, stringify({ version: '0.1', log: { level: 'error' }, storage: { filesystem: { rootdirectory: berth.root }, maintenance: { gc: { delay: '10m' } } } }));
    let done = false;
    const command = runCommand(process.execPath, ['--import', 'tsx', join(REPO_ROOT, 'src/cli.ts'), 'garbage-collect', '--delete-untagged', file]).finally(() => (done = true));

    // children 0-7 and loose images 0-1 are reused once the collection has started (after the
    // command's start-up); 8-11 and 2-3 never
    while (!done && (await unlessMissing(berth.app.driver.stat(layout.GC_MARK_STARTED))) === undefined) await sleep(5);
    const acknowledged: Image[] = [];
    let refused = 0;
    for (let round = 0; !done; round++) {
      const index = buildImage('oci-index', { children: [children[round % 8], children[(round + 3) % 8]] });
      const reuse = loose[round % 2];
      const pushes = [putManifest(berth.url, name, `i${round}`, index.body, index.mediaType), putManifest(berth.url, name, `l${round}`, reuse.body, reuse.mediaType)];
      const [indexPut, loosePut] = await Promise.all(pushes);
      for (const [res, image] of [[indexPut, index], [loosePut, reuse]] as const) {
        await res.arrayBuffer();
        if (res.status === 201) acknowledged.push(image);
        else refused++; // MANIFEST_UNKNOWN / BLOB_UNKNOWN for what was already gone: a safe answer
      }
      await sleep(5);
    }
    const result = await command;
    assert.equal(result.code, 0, result.stderr);
    console.log(`# garbage-collect beside a serving berth: ${acknowledged.length} pushes acknowledged during the run, ${refused} refused; ${result.stdout.trim().split('\n').at(-1)}`);
    assert.ok(acknowledged.length > 0);
    for (const image of acknowledged) assert.equal(await servedWhole(berth.url, name, image), undefined);
    for (const child of children.slice(8)) {
      assert.equal((await fetch(`${berth.url}/v2/${name}/manifests/${child.digest}`, { method: 'HEAD' })).status, 404, 'an old untagged child nobody reused is deleted');
    }
    for (const image of loose.slice(2)) {
      for (const blob of image.blobs) assert.equal(await unlessMissing(berth.app.driver.stat(layout.blobData(blob.digest as Digest))), undefined, 'an old blob nobody reused is in the trash');
    }
    assert.match(result.stdout, /garbage collection: [1-9]\d* untagged manifests deleted/);
  });
});
