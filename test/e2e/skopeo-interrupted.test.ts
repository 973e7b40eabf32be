/**
 * An interrupted push: skopeo is SIGKILLed while a big layer is streaming into berth (as soon as
 * some MiB of it sit in an upload session), then the same push runs again. The second push must
 * complete, the image must come back byte for byte, and nothing half-written may have become a
 * blob: every file under blobs/ hashes to its name, and the killed session's bytes are not
 * visible anywhere but in its own `_uploads/` directory (left for the upload purger).
 */
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { startBerth, type TestRegistry } from '../helpers/berth.js';
import { fileDigest, verifyBlobStore } from '../helpers/berth-process.js';
import { blobPath, buildClientImage, listFiles, MiB, type ClientImage } from '../helpers/client-images.js';
import { guardProcess } from '../helpers/processes.js';
import { assertTool, needTool } from '../helpers/tools.js';

const run = promisify(execFile);
const REPO = 'e2e/interrupted';

/** bytes held by every upload session of `repo`, by uuid */
async function uploadSizes(root: string, repo: string): Promise<Map<string, number>> {
  const dir = join(root, 'docker/registry/v2/repositories', repo, '_uploads');
  const sizes = new Map<string, number>();
  let uuids: string[];
  try {
    uuids = await readdir(dir);
  } catch {
    return sizes;
  }
  for (const uuid of uuids) {
    try {
      sizes.set(uuid, (await stat(join(dir, uuid, 'data'))).size);
    } catch {
      // created or removed just now
    }
  }
  return sizes;
}

describe('skopeo push killed in the middle, then pushed again', needTool('skopeo', 'the interrupted-push test'), () => {
  let registry: TestRegistry;
  let host: string;
  let work: string;
  let image: ClientImage;

  before(async () => {
    assertTool('skopeo', 'the interrupted-push test');
    registry = await startBerth();
    host = new URL(registry.url).host;
    work = await mkdtemp(join(tmpdir(), 'berth-skopeo-kill-'));
    // 160 MiB stored with gzip level 0: minutes of nothing for the CPU, seconds of transfer
    image = await buildClientImage(join(work, 'src'), { format: 'oci', layers: [4096, 160 * MiB, 8192] });
  });
  after(async () => {
    await registry?.stop();
    if (work) await rm(work, { recursive: true, force: true });
  });

  let killedAt = 0;
  let killedUploads = new Map<string, number>();

  it('SIGKILL skopeo once the big layer is partly uploaded', async () => {
    const child = spawn('skopeo', ['copy', '--dest-tls-verify=false', image.ref, `docker://${host}/${REPO}:v1`], { stdio: ['ignore', 'ignore', 'pipe'] });
    guardProcess(child);
    let stderr = '';
    child.stderr!.on('data', (c: Buffer) => (stderr += c.toString()));
    const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.once('close', (code, signal) => resolve({ code, signal })));
    let done = false;
    void exited.then(() => (done = true));

    const deadline = Date.now() + 120_000;
    while (!done && Date.now() < deadline) {
      const sizes = await uploadSizes(registry.root!, REPO);
      const biggest = Math.max(0, ...sizes.values());
      if (biggest >= 8 * MiB) {
        child.kill('SIGKILL');
        killedAt = biggest;
        break;
      }
      await sleep(5);
    }
    const status = await exited;
    assert.equal(status.signal, 'SIGKILL', `skopeo was killed mid-push (it ended by itself: code ${status.code}, ${stderr.slice(-500)})`);
    // let berth notice the broken connection and settle what it received
    await sleep(500);
    killedUploads = await uploadSizes(registry.root!, REPO);
    assert.ok(killedAt >= 8 * MiB && killedAt < 160 * MiB, `killed with ${killedAt} bytes of the big layer on the server`);

    const big = image.manifests[0].layers[1];
    assert.equal((await fetch(`${registry.url}/v2/${REPO}/blobs/${big.digest}`, { method: 'HEAD' })).status, 404, 'the partial layer is no blob');
    assert.equal((await fetch(`${registry.url}/v2/${REPO}/manifests/v1`, { method: 'HEAD' })).status, 404, 'no manifest without its layers');
    await verifyBlobStore(registry.root!);
  });

  it('the same push again completes, and the image comes back byte for byte', async () => {
    await run('skopeo', ['copy', '--dest-tls-verify=false', image.ref, `docker://${host}/${REPO}:v1`], { timeout: 300_000 });
    const inspected = JSON.parse((await run('skopeo', ['inspect', '--tls-verify=false', `docker://${host}/${REPO}:v1`])).stdout) as { Digest: string; Layers: string[] };
    assert.equal(inspected.Digest, image.digest);
    assert.deepEqual(inspected.Layers, image.manifests[0].layers.map((l) => l.digest));

    const out = join(work, 'out');
    await run('skopeo', ['copy', '--src-tls-verify=false', `docker://${host}/${REPO}:v1`, `dir:${out}`], { timeout: 300_000 });
    const files = await listFiles(out);
    assert.deepEqual(files.filter((f) => /^[0-9a-f]{64}$/.test(f)).sort(), [...image.blobs.keys()].map((d) => d.slice(7)).sort());
    for (const digest of image.blobs.keys()) {
      assert.equal(await fileDigest(join(out, digest.slice(7))), digest);
      assert.equal(await fileDigest(blobPath(image, digest)), digest);
    }
  });

  it('storage holds no corrupt blob; the killed session is only an upload left to purge', async () => {
    const hexes = await verifyBlobStore(registry.root!);
    for (const digest of image.blobs.keys()) assert.ok(hexes.includes(digest.slice(7)), `${digest} stored`);
    const after = await uploadSizes(registry.root!, REPO);
    for (const [uuid, size] of after) {
      assert.ok(killedUploads.has(uuid), `upload ${uuid} (${size} bytes) is one the killed push left behind`);
    }
  });
});
